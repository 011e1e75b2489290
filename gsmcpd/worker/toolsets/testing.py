"""testing: the image's unittest.TestCase classes, run in this worker against its view
(so a session tests its own uncommitted changes)."""

from __future__ import annotations

import io
import unittest
from contextlib import redirect_stderr, redirect_stdout

from gsmcpd.image import catalog
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import HardBreak, ToolError, Toolset, array_prop, object_schema, string_prop
from gsmcpd.worker.toolsets.browsing import CLASS_NAME, SELECTOR


class _Result(unittest.TestResult):
    """Collects one outcome per test; a hard break is re-raised, never recorded."""

    def __init__(self):
        super().__init__()
        self.outcomes: list[dict] = []

    def _record(self, test, outcome, err=None, reason=None):
        entry = {"test": test.id(), "outcome": outcome}
        if err is not None:
            entry["exception"] = err[0].__name__
            entry["message"] = str(err[1])
            entry["traceback"] = self._exc_info_to_string(err, test)
        if reason:
            entry["message"] = reason
        self.outcomes.append(entry)

    def addError(self, test, err):
        if issubclass(err[0], HardBreak):
            raise err[1]
        super().addError(test, err)
        self._record(test, "error", err)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failure", err)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "pass")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason=reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "expectedFailure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "unexpectedSuccess")

    def addSubTest(self, test, subtest, err):
        if err is not None and issubclass(err[0], HardBreak):
            raise err[1]
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._record(subtest, "failure" if failed else "error", err)


FAILED = ("failure", "error", "unexpectedSuccess")


class TestingToolset(Toolset):
    name = "testing"
    tool_names = ("describe_test_failure", "list_failing_tests", "list_test_classes",
                  "run_test_class", "run_test_method")
    read_only_safe = frozenset(tool_names)
    idempotent = frozenset({"list_test_classes"})

    def register(self, registry):
        one_test = object_schema({**CLASS_NAME, **SELECTOR}, ["className", "selector"])
        registry.add(Tool("describe_test_failure", "Re-run one test in isolation and report the "
                          "exception class, message and traceback.", one_test,
                          self.describe_test_failure))
        registry.add(Tool("list_failing_tests", "Failing and erroring tests of the given classes "
                          "(or all test classes), with progress per test.",
                          object_schema({"classNames": array_prop(string_prop("a test class"),
                                                                  "test classes to run (default all)")}),
                          self.list_failing_tests))
        registry.add(Tool("list_test_classes", "All unittest.TestCase subclasses in the image.",
                          object_schema(), self.list_test_classes))
        registry.add(Tool("run_test_class", "Run a test class: summary and failures, with "
                          "progress per test.", object_schema(CLASS_NAME, ["className"]),
                          self.run_test_class))
        registry.add(Tool("run_test_method", "Run one test method.", one_test, self.run_test_method))

    # -- helpers ---------------------------------------------------------

    def _test_classes(self) -> list[tuple[str, type]]:
        self.view.load_all()
        found = []
        for ref in catalog.image_classes(self.view):
            module = self.view.module(ref.module)
            cls = None if module is None else vars(module).get(ref.name)
            if isinstance(cls, type) and issubclass(cls, unittest.TestCase) and self.view.defines(cls):
                found.append((ref.qualified, cls))
        return found

    def _test_class(self, name: str) -> tuple[str, type]:
        ref = catalog.resolve_class(self.view, name)
        cls = catalog.live_class(self.view, ref)
        if ref.is_kernel or not issubclass(cls, unittest.TestCase):
            raise ToolError("notFound", f"{ref.qualified} is not a unittest.TestCase class in the image")
        return ref.qualified, cls

    def _tests_of(self, cls: type, selector: str | None = None) -> list[unittest.TestCase]:
        if selector is not None:
            if not selector.isidentifier() or not callable(getattr(cls, selector, None)):
                raise ToolError("notFound", f"{cls.__qualname__} has no test method {selector}")
            return [cls(selector)]
        names = unittest.TestLoader().getTestCaseNames(cls)
        return [cls(name) for name in names]

    def _run(self, tests: list[unittest.TestCase], *, report_progress: bool) -> _Result:
        result = _Result()
        output = io.StringIO()
        for done, test in enumerate(tests, start=1):
            with redirect_stdout(output), redirect_stderr(output):
                test.run(result)
            if report_progress:
                self.progress(done, len(tests), message=test.id())
        return result

    @staticmethod
    def _summary(result: _Result) -> dict:
        counts = {}
        for entry in result.outcomes:
            counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
        return {"run": result.testsRun, "passed": counts.get("pass", 0),
                "failures": counts.get("failure", 0), "errors": counts.get("error", 0),
                "skipped": counts.get("skipped", 0)}

    # -- tools -----------------------------------------------------------

    def list_test_classes(self, arguments):
        names = [name for name, _ in self._test_classes()]
        return {"text": "\n".join(names) or "no test classes in the image",
                "structured": {"testClasses": names}}

    def run_test_class(self, arguments):
        qualified, cls = self._test_class(arguments["className"])
        result = self._run(self._tests_of(cls), report_progress=True)
        return self._report(qualified, result)

    def run_test_method(self, arguments):
        qualified, cls = self._test_class(arguments["className"])
        result = self._run(self._tests_of(cls, arguments["selector"]), report_progress=False)
        return self._report(qualified, result)

    def _report(self, qualified: str, result: _Result) -> dict:
        summary = self._summary(result)
        failed = [e for e in result.outcomes if e["outcome"] in FAILED]
        lines = [f"{qualified}: {summary['run']} run, {summary['passed']} passed, "
                 f"{summary['failures']} failed, {summary['errors']} errors, "
                 f"{summary['skipped']} skipped"]
        for entry in failed:
            lines.append(f"{entry['outcome'].upper()}: {entry['test']}: "
                         f"{entry.get('exception', '')}: {entry.get('message', '')}".rstrip(": "))
        return {"text": "\n".join(lines), "structured": {
            "class": qualified, **summary,
            "failed": [{k: e[k] for k in ("test", "outcome", "exception", "message") if k in e}
                       for e in failed]}}

    def list_failing_tests(self, arguments):
        names = arguments.get("classNames")
        classes = ([self._test_class(name) for name in names] if names is not None
                   else self._test_classes())
        tests = [test for _, cls in classes for test in self._tests_of(cls)]
        result = self._run(tests, report_progress=True)
        failed = [e for e in result.outcomes if e["outcome"] in FAILED]
        lines = [f"{e['test']} ({e['outcome']}): {e.get('exception', '')}: {e.get('message', '')}"
                 .rstrip(": ") for e in failed]
        return {"text": "\n".join(lines) or f"no failing tests ({result.testsRun} run)",
                "structured": {"run": result.testsRun,
                               "failing": [{k: e[k] for k in ("test", "outcome", "exception", "message")
                                            if k in e} for e in failed]}}

    def describe_test_failure(self, arguments):
        qualified, cls = self._test_class(arguments["className"])
        result = self._run(self._tests_of(cls, arguments["selector"]), report_progress=False)
        entry = result.outcomes[-1] if result.outcomes else {"outcome": "notRun"}
        if entry["outcome"] not in FAILED:
            return {"text": f"{qualified}.{arguments['selector']}: {entry['outcome']} (no failure)",
                    "structured": {"test": f"{qualified}.{arguments['selector']}", **entry}}
        text = "\n".join([f"{entry['test']}: {entry['outcome']}",
                          f"exception: {entry.get('exception', '')}",
                          f"message: {entry.get('message', '')}", "", entry.get("traceback", "")])
        return {"text": text.rstrip(), "structured": entry}
