#!/usr/bin/python3
"""Sorts ThreadSanitizer reports into ours and gRPC's (scripts/sanitize.sh).

usage: tsan_triage.py SOURCE_ROOT REPORT_FILE...

Debian's gRPC is not built with TSan, so the synchronisation between a
call's threads happens where TSan cannot see it, and code that gRPC's
headers compile into our binaries is reported racing with itself (the
shared toolchain notes, section Sanitizers). scripts/tsan.supp removes what
a top-frame pattern can name; this script judges the rest, report by report.

Each stack of a report (the access, the previous access, a lock's stacks)
is walked from the top: the first frame that belongs to posewire (a file
under SOURCE_ROOT, or a function in namespace posewire) makes the stack
ours; the first that belongs to gRPC (namespace grpc, a gRPC header or
library) makes it gRPC's; standard library, protobuf, Abseil and the
message code protoc generates from proto/ are skipped, since both sides
call them. A report is ours when any stack is
ours, or when no stack is gRPC's (nothing to blame it on), with one
exception: a report between our code and gRPC (de)serialising a message
(SerializationTraits, CallOpSendMessage, CallOpRecvMessage) is the hand-off
of a client's request or response to gRPC's threads, which our annotations
(proto/grpc_handoff.h) cannot reach because gRPC touches the message
before our callback runs; those are counted apart. The server parses and
serialises its own messages, so on its side no such hand-off exists. Any
report of ours fails the run and is printed whole; the others are counted
by top frame.
Exit code: 0 when no report is ours, 1 otherwise.
"""

import collections
import re
import sys

FRAME = re.compile(r"^\s+#\d+ (?P<function>.*?) (?P<file>\S+) \((?P<module>[^)]*)\)$")


def frame_owner(line, root):
    match = FRAME.match(line)
    if not match:
        return None
    function, path, module = match.group("function", "file", "module")
    # Code protoc generated from proto/ is message plumbing, like protobuf's
    # own: skipped, so the stack is judged by who called it.
    if function.startswith("posewire::v1::") or "/proto/posewire/" in path:
        return None
    if path.startswith(root) or function.startswith("posewire::"):
        return "ours"
    if (function.startswith(("grpc::", "grpc_", "gpr_"))
            or path.startswith(("/usr/include/grpc", "/usr/include/grpcpp"))
            or module.startswith(("libgrpc", "libgpr"))):
        return "grpc"
    return None


def stack_owner(lines, root):
    for line in lines:
        owner = frame_owner(line, root)
        if owner:
            return owner
    return "unknown"


MESSAGE_HANDOFF = re.compile(
    r"grpc::SerializationTraits<|grpc::internal::CallOpRecvMessage<|"
    r"grpc::internal::CallOpSendMessage::")


def is_message_handoff(stack):
    return any(MESSAGE_HANDOFF.search(line) for line in stack)


def split_reports(text):
    reports = []
    current = None
    for line in text.splitlines():
        if line.startswith("WARNING: ThreadSanitizer:"):
            current = [line]
            reports.append(current)
        elif current is not None:
            if line.startswith("SUMMARY: ThreadSanitizer:"):
                current.append(line)
                current = None
            else:
                current.append(line)
    return reports


def stacks(report):
    """The frame lines of each stack, except 'Thread ... created at' (and
    the location's allocation), unless those are all there is, as in a
    thread leak."""
    result, skipped, current, skip = [], [], None, False
    for line in report[1:]:
        if re.match(r"^\s+#0 ", line):
            current = []
            (skipped if skip else result).append(current)
        if current is not None and re.match(r"^\s+#\d+ ", line):
            current.append(line)
        elif line.strip() == "" or not line.startswith("    "):
            current = None
            skip = line.strip().startswith(("Thread T", "Location is"))
    return result or skipped


def main():
    root, files = sys.argv[1], sys.argv[2:]
    ours, grpc, handoffs = [], collections.Counter(), 0
    for name in files:
        with open(name, errors="replace") as f:
            for report in split_reports(f.read()):
                report_stacks = stacks(report)
                owners = [stack_owner(s, root) for s in report_stacks]
                handoff = "ours" in owners and all(
                    is_message_handoff(s)
                    for s, owner in zip(report_stacks, owners)
                    if owner == "grpc") and "grpc" in owners
                if handoff:
                    handoffs += 1
                elif "ours" in owners or "grpc" not in owners:
                    ours.append((name, report))
                else:
                    top = FRAME.match(stacks(report)[0][0])
                    grpc[re.sub(r"<.*>", "<>", top.group("function"))[:120]
                         if top else report[0]] += 1
    print(f"tsan: {sum(grpc.values())} reports inside gRPC's call machinery "
          f"(not ours), by top frame:")
    for function, count in grpc.most_common():
        print(f"  {count:5d}  {function}")
    print(f"tsan: {handoffs} reports between a client and gRPC "
          f"(de)serialising the message it handed over")
    print(f"tsan: {len(ours)} reports in posewire's code")
    for name, report in ours:
        print(f"--- {name}")
        print("\n".join(report))
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
