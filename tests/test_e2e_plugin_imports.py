"""End to end: an image package importing its plugins by name (importlib.import_module in a
loop), one of which comes to fail: what refresh names, through a real daemon."""

from helpers import Daemon, open_session
from test_e2e_tools import call_tool, structured
from test_tools_failed_imports import PLUGINS
from test_tools_support import write_image


def test_refresh_names_the_package_and_the_plugin_that_failed_in_it(tmp_path):
    # importErrors named plugs.bad alone: the package, left live here, fails in a new session.
    image = write_image(tmp_path / "image", PLUGINS)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code="import plugs")
        (image / "plugs" / "bad.py").write_text("raise RuntimeError('bad plugin')\n")
        assert structured(c, "refresh")["importErrors"] == {
            "plugs": "raised importing its submodule plugs.bad: RuntimeError: bad plugin",
            "plugs.bad": "RuntimeError: bad plugin"}
        c.close()


def test_a_plugin_failing_with_a_long_message_is_named_though_the_answer_cuts_it(tmp_path):
    # Named after the message, the submodule went with the cut of it, in structuredContent
    # (its first REPEAT_CAP characters) and in the text (past ERRORS_BUDGET).
    image = write_image(tmp_path / "image", PLUGINS)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code="import plugs")
        (image / "plugs" / "bad.py").write_text("raise RuntimeError('x' * 2_100_000)\n")
        refreshed = call_tool(c, "refresh", {})
        named = "raised importing its submodule plugs.bad: RuntimeError: xxx"
        assert refreshed["structuredContent"]["importErrors"]["plugs"].startswith(named)
        text = refreshed["content"][0]["text"]
        assert f"import error in plugs: {named}" in text and "x" * 2_100_000 not in text
        c.close()
