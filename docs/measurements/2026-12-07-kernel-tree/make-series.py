#!/usr/bin/env python3
"""Puts 16 commits on a kernel tree made from Debian's linux-source-7.3 (its first commit
tagged v7.3.4): fifteen that change comments, documentation or nothing a benchmark sees,
spread over kernel/events, kernel/trace, arch/x86, kernel/smp.c and elsewhere, and one
(the eleventh) that makes a real perf_event path slower: hardware breakpoint slot
reservation walks every task-bound breakpoint of the machine again, as Linux 5.10 did,
instead of looking up the task's own in the per-task table.

usage: make-series.py TREE   (commits on the current branch; run once)
"""
import subprocess
import sys

tree = sys.argv[1]


def git(*args):
    subprocess.run(["git", "-C", tree, "-c", "user.name=perfscale demo",
                    "-c", "user.email=demo@perfscale.invalid", *args], check=True)


def insert_before(path, anchor, text):
    full = f"{tree}/{path}"
    lines = open(full).read().split("\n")
    index = next(i for i, line in enumerate(lines) if line.startswith(anchor))
    lines[index:index] = text.rstrip("\n").split("\n")
    open(full, "w").write("\n".join(lines))


def commit(subject, body, path):
    git("add", path)
    git("commit", "-q", "-m", f"{subject}\n\n{body}")


C = "/*\n * {}\n */"

SLOW_OLD = """	rcu_read_lock();
	head = rhltable_lookup(&task_bps_ht, &bp->hw.target, task_bps_ht_params);
	if (!head)
		goto out;

	rhl_for_each_entry_rcu(iter, pos, head, hw.bp_list) {
		if (find_slot_idx(iter->attr.bp_type) != type)
			continue;

		if (iter->cpu >= 0) {
			if (cpu == -1) {
				count = -1;
				goto out;
			} else if (cpu != iter->cpu)
				continue;
		}

		count += hw_breakpoint_weight(iter);
	}

out:
	rcu_read_unlock();
	return count;
}"""

SLOW_NEW = """	/*
	 * Walk every task-bound breakpoint and keep the target's: one pass
	 * that also sees breakpoints whose task-table entry is in flight.
	 */
	rhltable_walk_enter(&task_bps_ht, &hti);
	rhashtable_walk_start(&hti);
	while ((iter = rhashtable_walk_next(&hti))) {
		if (IS_ERR(iter)) {
			/* The table was resized: the walk starts over. */
			if (PTR_ERR(iter) == -EAGAIN) {
				count = 0;
				continue;
			}
			break;
		}
		if (iter->hw.target != bp->hw.target)
			continue;
		if (find_slot_idx(iter->attr.bp_type) != type)
			continue;

		if (iter->cpu >= 0) {
			if (cpu == -1) {
				count = -1;
				break;
			} else if (cpu != iter->cpu)
				continue;
		}

		count += hw_breakpoint_weight(iter);
	}
	rhashtable_walk_stop(&hti);
	rhashtable_walk_exit(&hti);
	return count;
}"""


def slow_reservation():
    path = "kernel/events/hw_breakpoint.c"
    full = f"{tree}/{path}"
    text = open(full).read()
    assert SLOW_OLD in text
    text = text.replace(SLOW_OLD, SLOW_NEW, 1)
    text = text.replace("""	struct rhlist_head *head, *pos;
	struct perf_event *iter;
	int count = 0;

	/*
	 * We need a stable snapshot of the per-task breakpoint list.""",
                        """	struct rhashtable_iter hti;
	struct perf_event *iter;
	int count = 0;

	/*
	 * We need a stable snapshot of the per-task breakpoint list.""", 1)
    open(full, "w").write(text)
    commit("perf/hw_breakpoint: Count a task's pinned slots in one walk of the table",
           "task_bp_pinned() looks the target up in the per-task rhltable. Walk the\n"
           "whole table instead and keep the target's breakpoints, so that a\n"
           "breakpoint whose entry is being moved is seen too.\n\n"
           "(perfscale demonstration: this is the commit that makes slot reservation\n"
           "walk every task-bound breakpoint of the machine, as Linux 5.10 did.)", path)


SERIES = [
    ("kernel/events/core.c", "SYSCALL_DEFINE5(perf_event_open,",
     C.format("sys_perf_event_open - open a performance event, associate it to a task/cpu\n"
              " *\n * (the group leader's context decides where a sibling may live)"),
     "perf/core: Say where a group's siblings may live", "Comment only."),
    ("kernel/trace/trace_events.c", "int trace_set_clr_event(",
     C.format("Set or clear one event by system and name; either may be NULL."),
     "tracing/events: Document trace_set_clr_event()'s NULL arguments", "Comment only."),
    ("Documentation/admin-guide/perf-security.rst", "Perf events and tool security",
     ".. The capabilities below are checked at perf_event_open() time.\n",
     "Documentation/perf-security: Note when capabilities are checked", "Documentation only."),
    ("kernel/events/ring_buffer.c", "static __always_inline int",
     C.format("The fast path of perf_output_begin(): no lost records to emit."),
     "perf/ring_buffer: Comment the output fast path", "Comment only."),
    ("arch/x86/kernel/hw_breakpoint.c", "int arch_install_hw_breakpoint(",
     C.format("Called with the perf context's lock held, interrupts off."),
     "x86/hw_breakpoint: Say what arch_install_hw_breakpoint() runs under", "Comment only."),
    ("kernel/trace/trace_uprobe.c", "static int uprobe_dispatcher(",
     C.format("One uprobe consumer for both perf and ftrace users."),
     "tracing/uprobes: Comment uprobe_dispatcher()", "Comment only."),
    ("kernel/events/uprobes.c", "static void handle_swbp(",
     C.format("Entered from the int3 handler in the context of the probed task."),
     "uprobes: Say where handle_swbp() is called from", "Comment only."),
    ("tools/perf/Documentation/perf-bench.txt", "SUBSYSTEM",
     "// The breakpoint suite measures thread creation and enable/disable.\n",
     "perf bench: Mention the breakpoint suite's two benchmarks", "Documentation only."),
    ("kernel/smp.c", "int smp_call_function_single(",
     C.format("Returns 0 on success, else a negative status code; may wait."),
     "smp: Document smp_call_function_single()'s return", "Comment only."),
    ("kernel/events/hw_breakpoint.c", "int register_perf_hw_breakpoint(",
     C.format("Reserves the slot first; the arch check comes after."),
     "perf/hw_breakpoint: Say in which order registration checks", "Comment only."),
    None,  # the slowdown
    ("kernel/trace/ftrace.c", "int ftrace_set_filter(",
     C.format("The filter is applied at the next ftrace_ops registration."),
     "ftrace: Say when a filter takes effect", "Comment only."),
    ("kernel/events/callchain.c", "get_perf_callchain(",
     C.format("The entry returned is per-CPU; release it with put_callchain_entry()."),
     "perf/callchain: Say how the entry is released", "Comment only."),
    ("kernel/trace/trace_output.c", "int trace_print_context(",
     C.format("The comm, pid, CPU and flags columns of a trace line."),
     "tracing/output: Comment trace_print_context()", "Comment only."),
    ("kernel/events/core.c", "void perf_event_exit_task(",
     C.format("Called by do_exit() before the task's files are closed."),
     "perf/core: Say when perf_event_exit_task() is called", "Comment only."),
    ("MAINTAINERS", "PERFORMANCE EVENTS SUBSYSTEM",
     "", "MAINTAINERS: No change but a trailing note", "Touches MAINTAINERS only."),
]

for item in SERIES:
    if item is None:
        slow_reservation()
        continue
    path, anchor, text, subject, body = item
    if path == "MAINTAINERS":
        with open(f"{tree}/{path}", "a") as f:
            f.write("\n")
    else:
        insert_before(path, anchor, text)
    commit(subject, body, path)
