#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-in CSI plugin for the csi probe's tests: a real gRPC server
(python3-grpcio, generic handlers, the protobuf bytes written by hand) on a
Unix socket, serving csi.v1.Identity/Probe and GetPluginInfo.

  csi_plugin.py --socket PATH [--socket PATH2]... [--ready true|false|absent]
                [--name NAME] [--control FILE]
                [--flavour identity|node|controller|monolith]
                [--answer-after SECONDS] [--name-hex HEX]
      Probe answers ready true, false, or without the field; GetPluginInfo
      answers NAME (default csi.example.com; `{dir}' in it: the name of the
      socket's directory, each socket its own) and version 1.0.0.  With
      --control FILE, each Probe reads FILE when it exists: `true', `false',
      `absent', or `error CODE MESSAGE' (a gRPC error), so a test switches
      the answer at run time by writing the file.
      --flavour: what discovery's identification finds.  identity (the
      default) serves no GetPluginCapabilities and no csi.v1.Node service
      (both UNIMPLEMENTED); controller lists CONTROLLER_SERVICE (and
      VOLUME_ACCESSIBILITY_CONSTRAINTS); node lists only a volume expansion
      and answers csi.v1.Node/NodeGetInfo; monolith does both.
      --name-hex HEX: GetPluginInfo answers the bytes HEX as its name, in
      place of NAME: one no text takes (a NUL byte, 256 bytes and more).
      --answer-after: every call fails UNAVAILABLE (`starting') until
      SECONDS after the start: a plugin whose socket is there before it
      answers.
      --stagger SECONDS: each PATH its own server, started SECONDS after
      the one before (sockets created one at a time, in one process);
      prints `listening on PATH' for each.
      --workers N: the server's threads (default 8).
  csi_plugin.py --hang PATH...
      Listens on every PATH, accepts connections and never answers (nor
      reads): a plugin that is stuck.

Writes PATH (each of them) only once it listens; a test waits for the
socket files.  Runs until killed.
"""
import argparse
import os
import select
import signal
import socket
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(num, data):
    """A length-delimited field (wire type 2)."""
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_varint(num, value):
    return varint(num << 3 | 0) + varint(value)


def probe_response(ready):
    """csi.v1.ProbeResponse: field 1 `ready', a google.protobuf.BoolValue
    whose field 1 is the bool.  A field the probe does not know (field 7,
    a fixed32) comes first, so that the reader has to skip it."""
    unknown = varint(7 << 3 | 5) + b"\x01\x02\x03\x04"
    if ready == "absent":
        return unknown
    inner = field_varint(1, 1) if ready == "true" else b""  # false: the default, empty
    return unknown + field_bytes(1, inner)


def info_response(name):
    """csi.v1.GetPluginInfoResponse: name (1, str or bytes),
    vendor_version (2), and a manifest entry (3, a map entry message)."""
    entry = field_bytes(1, b"k") + field_bytes(2, b"v")
    raw = name if isinstance(name, bytes) else name.encode()
    return (field_bytes(1, raw) + field_bytes(2, b"1.0.0") +
            field_bytes(3, entry))


def caps_response(flavour):
    """csi.v1.GetPluginCapabilitiesResponse: capabilities (1), each a
    PluginCapability whose service (1) has a type (1: CONTROLLER_SERVICE,
    2: VOLUME_ACCESSIBILITY_CONSTRAINTS) or whose volume_expansion (2) has
    a type (1: ONLINE)."""
    def service(t):
        return field_bytes(1, field_bytes(1, field_varint(1, t)))
    if flavour in ("controller", "monolith"):
        return service(2) + service(1)
    return field_bytes(1, field_bytes(2, field_varint(1, 1)))


def node_info_response():
    """csi.v1.NodeGetInfoResponse: node_id (1), max_volumes_per_node (2)."""
    return field_bytes(1, b"node-1") + field_varint(2, 16)


def serve_grpc(args):
    import grpc  # python3-grpcio
    import time
    from concurrent import futures

    started = time.monotonic()

    def starting(context):
        if args.answer_after and time.monotonic() - started < args.answer_after:
            context.abort(grpc.StatusCode.UNAVAILABLE, "starting")

    def current():
        if args.control and os.path.exists(args.control):
            with open(args.control) as f:
                return f.read().strip() or args.ready
        return args.ready

    def probe(request, context):
        starting(context)
        mode = current()
        if mode.startswith("error"):
            parts = mode.split(None, 2)
            code = int(parts[1]) if len(parts) > 1 else 14
            msg = parts[2] if len(parts) > 2 else "plugin failed"
            status = next(s for s in grpc.StatusCode if s.value[0] == code)
            context.abort(status, msg)
        return probe_response(mode)

    def info_for(name):
        def info(request, context):
            starting(context)
            return info_response(name)
        return info

    def caps(request, context):
        starting(context)
        return caps_response(args.flavour)

    def node_info(request, context):
        starting(context)
        return node_info_response()

    def handlers_for(name):
        handlers = {
            "Probe": grpc.unary_unary_rpc_method_handler(probe),
            "GetPluginInfo": grpc.unary_unary_rpc_method_handler(info_for(name)),
        }
        if args.flavour != "identity":
            handlers["GetPluginCapabilities"] = grpc.unary_unary_rpc_method_handler(caps)
        generic = [grpc.method_handlers_generic_handler("csi.v1.Identity", handlers)]
        if args.flavour in ("node", "monolith"):
            generic.append(grpc.method_handlers_generic_handler(
                "csi.v1.Node",
                {"NodeGetInfo": grpc.unary_unary_rpc_method_handler(node_info)}))
        return tuple(generic)

    def name_of(path):
        if args.name_hex:
            return bytes.fromhex(args.name_hex)
        return args.name.replace("{dir}", os.path.basename(os.path.dirname(path)))

    if args.stagger:
        servers = []
        for path in args.socket:
            if os.path.exists(path):
                os.unlink(path)
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
            server.add_generic_rpc_handlers(handlers_for(name_of(path)))
            server.add_insecure_port("unix:" + path)
            server.start()
            servers.append(server)
            print("listening on %s" % path, flush=True)
            time.sleep(args.stagger)
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        while True:
            time.sleep(3600)

    # The sockets by the name they answer: one server per name (the
    # handlers cannot tell which socket a call came on), one executor.
    by_name = {}
    for path in args.socket:
        by_name.setdefault(name_of(path), []).append(path)
    executor = futures.ThreadPoolExecutor(max_workers=args.workers)
    servers = []
    for name, paths in by_name.items():
        server = grpc.server(executor)
        server.add_generic_rpc_handlers(handlers_for(name))
        for path in paths:
            if os.path.exists(path):
                os.unlink(path)
            server.add_insecure_port("unix:" + path)
        servers.append(server)
    for server in servers:
        server.start()
    signal.signal(signal.SIGTERM, lambda *a: ([s.stop(0) for s in servers], sys.exit(0)))
    print("listening on %s" % " ".join(args.socket), flush=True)
    servers[0].wait_for_termination()


def serve_hang(paths):
    listeners = []
    held = []
    for p in paths:
        if os.path.exists(p):
            os.unlink(p)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(p)
        s.listen(128)
        listeners.append(s)
    print("hanging on %d socket(s)" % len(paths), flush=True)
    while True:
        ready, _, _ = select.select(listeners, [], [], 1.0)
        for s in ready:
            c, _ = s.accept()
            held.append(c)  # never read, never written, never closed
            print("accepted a connection on %s" % s.getsockname(), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", action="append")
    ap.add_argument("--ready", default="true", choices=["true", "false", "absent"])
    ap.add_argument("--name", default="csi.example.com")
    ap.add_argument("--control")
    ap.add_argument("--flavour", default="identity",
                    choices=["identity", "node", "controller", "monolith"])
    ap.add_argument("--name-hex", metavar="HEX")
    ap.add_argument("--answer-after", type=float, default=0.0, metavar="SECONDS")
    ap.add_argument("--stagger", type=float, default=0.0, metavar="SECONDS")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--hang", nargs="+", metavar="PATH")
    args = ap.parse_args()
    if args.hang:
        serve_hang(args.hang)
    elif args.socket:
        serve_grpc(args)
    else:
        ap.error("--socket or --hang is required")


if __name__ == "__main__":
    main()
