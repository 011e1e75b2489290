"""`python -m gsmcpd serve|start|stop|status|end|check|cert`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from gsmcpd import __version__
from gsmcpd.config import (ConfigError, load_config, parse_optional_path, parse_port, parse_seconds,
                           parse_trace)
from gsmcpd.exitcodes import REFUSED


STATE_DIR_HELP = "pidfiles, logs, control sockets, default image (GS_MCP_STATE_DIR, default var/ in the checkout)"
# stop, status and end read only the state directory and the port from it
CONTROL_CONFIG_HELP = "conf file (GS_MCP_CONFIG); only its state_dir and port are read"


def _server_flags(parser: argparse.ArgumentParser) -> None:
    # `run-server.sh 8000`, as stop-server.sh takes it: PORT or --port, not two different ones
    parser.add_argument("port", nargs="?", help="TCP port (GS_MCP_PORT, default 8000)")
    parser.add_argument("--port", dest="port_flag", metavar="PORT", help="the same as PORT (GS_MCP_PORT)")
    parser.add_argument("--host", help="bind address (GS_MCP_HOST, default 127.0.0.1)")
    parser.add_argument("--config", help="conf file (GS_MCP_CONFIG); see etc/gsmcpd.conf")
    parser.add_argument("--image", help="image directory (GS_MCP_IMAGE, default <state dir>/image)")
    parser.add_argument("--state-dir", dest="state_dir", help=STATE_DIR_HELP)
    parser.add_argument("--readonly", action="store_const", const=True, default=None,
                        help="read-only sessions (GS_MCP_READONLY=1)")
    parser.add_argument("--toolsets", help="space/comma separated toolset names (GS_MCP_TOOLSETS)")
    parser.add_argument("--trace", nargs="?", const="1", default=None,
                        help="message trace: 1 (inbound) or both (GS_MCP_TRACE)")
    parser.add_argument("--behind-tls-proxy", dest="behind_tls_proxy", action="store_const",
                        const=True, default=None,
                        help="TLS ends at a proxy in front of us (GS_MCP_BEHIND_TLS_PROXY=1)")
    parser.add_argument("--log-file", dest="log_file", help=argparse.SUPPRESS)


_FLAG_DESTS = ("port", "host", "image", "state_dir", "readonly", "toolsets", "trace",
               "behind_tls_proxy", "log_file")


def _flags(args: argparse.Namespace) -> dict:
    flags = {dest: getattr(args, dest, None) for dest in _FLAG_DESTS}
    flags["config"] = getattr(args, "config", None)
    return {key: value for key, value in flags.items() if value is not None}


def _passthrough(args: argparse.Namespace) -> list[str]:
    """The flags `start` hands on to its detached `serve` (port and log file are added)."""
    argv: list[str] = []
    for dest in ("host", "config", "image", "state_dir", "toolsets", "trace"):
        value = getattr(args, dest)
        if value is None:
            continue
        # A path as load_config read it (~ expanded), absolute: serve runs elsewhere. "none"
        # (unset) stays a word; a blank config is unset (made absolute, the caller's directory).
        if dest == "config":
            if not value.strip():
                continue
            path = Path(value.strip()).expanduser()
        else:
            path = parse_optional_path(value) if dest in ("image", "state_dir") else None
        argv += ["--" + dest.replace("_", "-"), value if path is None else str(path.absolute())]
    for dest in ("readonly", "behind_tls_proxy"):
        if getattr(args, dest):
            argv.append("--" + dest.replace("_", "-"))
    return argv


def _seconds(text: str) -> float:
    """A duration flag, read as the config's seconds knobs are."""
    try:
        return parse_seconds(text)
    except ValueError as exc:   # argparse shows an ArgumentTypeError's own words
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port_argument(sub: argparse.ArgumentParser) -> None:
    """PORT, or --port PORT as start takes it (one of the two)."""
    sub.add_argument("port", nargs="?", help="default GS_MCP_PORT or 8000")
    sub.add_argument("--port", dest="port_flag", metavar="PORT", help="the same as PORT")


def _port_given(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    """PORT or --port PORT, as a number: 8000 and --port 08000 are one port, two different
    ones are refused. A lone argument that is no port is said to have been read as PORT:
    a flag's value split in two words (--toolsets core extra) was refused as a port."""
    if args.port is None:
        return args.port_flag
    try:
        port = parse_port(args.port)
    except ValueError as exc:
        where = ("end takes the session, then the port: gsmcpd end SESSION PORT" if args.command == "end"
                 else "the one argument without a flag is the port")
        parser.exit(2, f"gsmcpd {args.command}: error: argument PORT: {exc} ({where})\n")
    try:
        other = None if args.port_flag is None else parse_port(args.port_flag)
    except ValueError:   # refused as the knob, naming it
        return args.port_flag
    if other is not None and other != port:
        parser.exit(2, f"gsmcpd {args.command}: error: two ports given: {args.port} and --port {args.port_flag}\n")
    return args.port


def _trace_port(args: argparse.Namespace, argv: list[str]) -> None:
    """`run-server.sh --trace 8000`: --trace's optional value took the port. A value no trace
    setting reads but a port does is the port, with --trace alone (`--trace 1` stays 1),
    unless a port is given too, or it was written `--trace=8000`: then it was meant as the
    trace setting, and is refused so."""
    if getattr(args, "trace", None) is None or args.port is not None or args.port_flag is not None:
        return
    if _trace_written_with_equals(argv):
        return
    try:
        parse_trace(args.trace)
    except ValueError:
        try:
            parse_port(args.trace)
        except ValueError:
            return   # refused as a trace setting
        args.port, args.trace = args.trace, "1"


def _trace_written_with_equals(argv: list[str]) -> bool:
    """Whether the last --trace (or argparse's abbreviation of it, --tr) is `--trace=VALUE`."""
    with_equals = False
    for word in argv:
        if word == "--":
            break
        name, equals, _ = word.partition("=")
        if len(name) > 3 and "--trace".startswith(name):
            with_equals = bool(equals)
    return with_equals


class _ReadingParser(argparse.ArgumentParser):
    """A parser of a command line read back, not typed: no usage printed, no exit."""

    def error(self, message):
        raise ValueError(message)


def serve_ports(args: list[str]) -> list[str]:
    """The ports the arguments after `serve` give, as serve reads them (PORT, --port, or
    --trace PORT), the one it serves last; [] when none (or they do not parse). So stop
    knows the port of `serve 8000` from its command line, as of `serve --port 8000`."""
    parser = _ReadingParser(add_help=False)
    _server_flags(parser)
    parser.add_argument("--ready-fd", dest="ready_fd")
    try:
        parsed, _ = parser.parse_known_args(args)
    except ValueError:
        return []
    _trace_port(parsed, args)
    return [port for port in (parsed.port_flag, parsed.port) if port is not None]


# What an argument too many usually is: `--toolsets browsing search 8000` read `search` as PORT.
_SPLIT_VALUE = " (one PORT at most, and a flag takes one word: quote a value of several, --toolsets 'browsing search')"
_EXTRA_HINTS = {"serve": _SPLIT_VALUE, "start": _SPLIT_VALUE, "check": _SPLIT_VALUE,
                "stop": " (one PORT at most)", "status": " (one PORT at most)",
                "end": " (end takes the session, then the port: gsmcpd end SESSION PORT)"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gsmcpd", description="MCP server daemon")
    parser.add_argument("--version", action="version", version=f"gsmcpd {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run in the foreground (systemd, debugging)")
    _server_flags(serve)
    serve.add_argument("--ready-fd", dest="ready_fd", type=int, help=argparse.SUPPRESS)

    start = commands.add_parser("start", help="fork a detached server; return once it listens")
    _server_flags(start)

    for name, text in (("stop", "stop the server on PORT (by its pidfile)"),
                       ("status", "list the sessions of the server on PORT, and say if its log file refuses writes")):
        sub = commands.add_parser(name, help=text)
        _port_argument(sub)
        sub.add_argument("--state-dir", dest="state_dir", help=STATE_DIR_HELP)
        sub.add_argument("--config", help=CONTROL_CONFIG_HELP)
        if name == "stop":
            sub.add_argument("--timeout", type=_seconds, default=None,
                             help="seconds before SIGKILL (default 30, longer than the longest graceful stop)")
        else:
            sub.add_argument("--json", action="store_true", help="machine-readable output")

    end = commands.add_parser("end", help="end one session of the server on PORT (as its client's DELETE would)")
    end.add_argument("session", help="the session's id, or its first 8 or more hex digits (as status shows)")
    _port_argument(end)
    end.add_argument("--state-dir", dest="state_dir", help=STATE_DIR_HELP)
    end.add_argument("--config", help=CONTROL_CONFIG_HELP)

    check = commands.add_parser("check", help="verify the environment; change nothing")
    _server_flags(check)

    cert = commands.add_parser("cert", help="TLS certificate helpers")
    cert.add_argument("--self-signed", dest="self_signed", metavar="DIR", required=True,
                      help="write a throwaway self-signed cert and key into DIR")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args, extra = parser.parse_known_args(argv)
    if extra:
        # The top-level parser said it, under its own usage, as if no command had been read.
        hint = (f" (gsmcpd {args.command} --help lists its flags)" if any(word.startswith("-") for word in extra)
                else _EXTRA_HINTS.get(args.command, ""))
        parser.exit(2, f"gsmcpd {args.command}: error: unrecognized arguments: {' '.join(extra)}{hint}\n")
    if args.command != "cert":
        _trace_port(args, argv)
        args.port = _port_given(args, parser)
    try:
        return _run(args)
    except ConfigError as exc:
        print(f"gsmcpd: configuration refused: {exc}", file=sys.stderr)
        return REFUSED
    except BrokenPipeError:
        # `gsmcpd status | head -3`: the reader took what it wanted. No traceback, and
        # none at exit either, when Python flushes stdout once more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _run(args: argparse.Namespace) -> int:
    # Each command imports what it runs: status and stop must not pay for the server's.
    if args.command == "cert":
        from gsmcpd.auth.tls import write_self_signed
        cert_path, key_path = write_self_signed(Path(args.self_signed))
        print(f"certificate: {cert_path}\nkey:         {key_path}")
        return 0
    if args.command in ("stop", "status", "end"):
        flags = {"state_dir": args.state_dir, "port": args.port, "config": args.config}
        config = load_config({k: v for k, v in flags.items() if v is not None}, os.environ,
                             validate=False, only=("state_dir", "port"))
        if args.command == "stop":
            from gsmcpd import daemon
            timeout = daemon.STOP_TIMEOUT if args.timeout is None else args.timeout
            try:
                return daemon.stop(config.state_dir, config.port, timeout)
            except daemon.PidfileError as exc:
                print(f"{exc}; nothing was signalled")
                return 1
        if args.command == "end":
            return _end(config, args.session, port_given=args.port is not None)
        return _status(config, args.json)
    from gsmcpd import daemon
    if args.command == "check":
        try:
            config = load_config(_flags(args), os.environ)
        except ConfigError as exc:
            print(f"config         refused: {exc}\nPROBLEM: config: {exc}")
            return REFUSED
        return daemon.check(config)
    # --ready-fd: run by `start`, which has just validated these settings, its import of
    # the built-in toolsets' modules included, in the same checkout and environment.
    config = load_config(_flags(args), os.environ,
                         toolsets_imported=args.command == "serve" and args.ready_fd is not None)
    if args.command == "start":
        try:
            return daemon.start(config, _passthrough(args))
        except daemon.PidfileError as exc:   # a directory in its place, not ours to read
            print(f"{exc}; not started")
            return REFUSED
    return daemon.serve_main(config, ready_fd=args.ready_fd, detached=args.ready_fd is not None)


def _unanswered(config, exc: Exception) -> str:
    """Why the control socket did not serve the request, naming the gsmcpd that serves the
    port from another state directory (the unit's, given by GS_MCP_STATE_DIR), if one does."""
    from gsmcpd.daemon import serving_elsewhere
    from gsmcpd.router.control import NotPermitted, ServerRefused
    # This state directory's own server answered, or is another account's: none elsewhere to name.
    if isinstance(exc, (ServerRefused, NotPermitted)):
        return str(exc)
    elsewhere = serving_elsewhere(config.port, config.state_dir)
    return f"{exc}; but {elsewhere}" if elsewhere else str(exc)


def _status(config, as_json: bool) -> int:
    from gsmcpd.router import control
    try:
        reply = control.query(config.state_dir, config.port)
    except control.ControlError as exc:
        error = _unanswered(config, exc)
        if as_json:
            print(json.dumps({"port": config.port, "error": error}))
        else:
            print(f"gsmcpd status: {error}", file=sys.stderr)
        return 1
    print(control.render_status(reply, config.port, as_json))
    return 0


def _end(config, session: str, port_given: bool) -> int:
    from gsmcpd.router import control
    try:
        control.session_prefix(session)
    except control.ControlError as exc:
        # `end 8000`: the port where the session goes, the default port's server asked.
        swapped = not port_given and session.isdigit()
        print(f"gsmcpd end: {exc}" + (f": the session comes first, then the port: gsmcpd end SESSION "
                                      f"{session}" if swapped else ""), file=sys.stderr)
        return 1
    try:
        ended = control.query(config.state_dir, config.port, {"op": "end", "session": session})["ended"]
    except control.ControlError as exc:
        print(f"gsmcpd end: {_unanswered(config, exc)}", file=sys.stderr)
        return 1
    user, in_flight = control.cell(ended, "user"), control.cell(ended, "in_flight")   # escaped, cut
    print(f"ended session {ended['id_prefix']} of {user} (worker {ended['worker_pid']}, "
          f"open {control.format_duration(ended['age'])}"
          + (f", its call {in_flight} answered 'session ended'" if ended.get("answered") else "") + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
