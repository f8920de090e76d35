# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Record admission: a record speaks only for what the controller planned (docs/security.md, rule 4).

The controller knows every pair schedule, screen test and import it launched: they are the arguments it gave each
task, templated on the controller (the callback reads them from the task's own fields, never from what the node
returned). :class:`Plans` learns them task by task and :meth:`Plans.refusal` says why a record a task returned may
not be admitted, or None:

- a record of the group screen (``params.env.AIFABRIC_SCREEN``, group_screen.screen_of) is admitted only from the
  task whose arguments carry that very marker (``env.AIFABRIC_SCREEN``), for the host that ran it (the launcher),
  and when every host of the marker is a host of this run;
- a pairwise record (``peer`` set) is admitted only when its ``peer`` is a host of this run, and its pair is one the
  controller planned for the host that sent it: an entry of that host's sweep schedule (module ``perftest_sweep``,
  ``schedule`` of its ``phase: run`` task: ``[step, test, round, role, peer]``; the server's record of a client that
  never measured names the client as ``host``: a ``server`` entry of the sender for that client), the ``peer_name``
  of the import task that sent it, or a pair of the hosts of a ``run_once`` task's play (a launch the controller
  made for every host of it, such as the Kubernetes workloads);
- a record that claims to be the controller's own analysis (``tool.name: fleet-analysis``) is never admitted from a
  task.

A refused record becomes an ``env.task`` error of the host that sent it (stream.Collector._admitted): a record from
a node can make that node fail, never another host on its own word, and never adds a host to the report.
Controller-only (plugin_utils), no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, group_screen

SWEEP_MODULE = "perftest_sweep"
SERVER_SUFFIX = ".server"


def _module(action):
    """The short name of a task's action (``aifabric.acceptance.perftest_sweep`` -> ``perftest_sweep``)."""
    return str(action or "").rsplit(".", 1)[-1]


def _test_of(check):
    """(perftest program, role of the record's host) of a pairwise rdma check, or (None, None)."""
    if not isinstance(check, str) or not check.startswith("rdma."):
        return None, None
    name = check[len("rdma."):]
    if name.endswith(SERVER_SUFFIX):
        return name[:-len(SERVER_SUFFIX)], "server"
    return name, "client"


class Plans:
    """What the controller planned, per host, from the arguments of the tasks it launched."""

    def __init__(self):
        self.sweeps = {}     # host -> {(run_id, sweep_name): {(step, test, role, peer)}}

    def learn(self, host, action, args):
        """Remember the sweep schedule a ``perftest_sweep`` task's arguments give ``host``."""
        if _module(action) != SWEEP_MODULE or not isinstance(args, dict) or not isinstance(args.get("schedule"), list):
            return
        key = (str(args.get("run_id")), str(args.get("sweep_name") or "main"))
        entries = self.sweeps.setdefault(host, {}).setdefault(key, set())
        for entry in args["schedule"]:
            if isinstance(entry, (list, tuple)) and len(entry) == 5:
                entries.add((entry[0], str(entry[1]), str(entry[3]), str(entry[4])))

    def refusal(self, sender, rec, args, targeted, participants=None):
        """Why ``rec`` (returned by a task of ``sender`` with controller-side arguments ``args``) is not admitted, or
        None. ``targeted``: the hosts of this run; ``participants``: the hosts of a run_once task's play."""
        if analysis_records.is_analysis_record(rec):
            return "it claims to be the controller's own analysis (tool fleet-analysis), which no task returns"
        if group_screen.screen_of(rec) is not None:
            return _screen_refusal(sender, rec, args, targeted)
        peer = rec.get("peer")
        named = rec.get("host") or sender
        if not isinstance(peer, str) or not peer or peer == named:
            return None
        if peer not in targeted:
            return "its peer %r is not a host this run targets" % peer[:200]
        if participants and len(set(participants)) > 1:
            return None if named in participants and peer in participants else (
                "its pair %s - %s is not one of the hosts of the play the task acted for" % (named, peer))
        if isinstance(args, dict) and args.get("peer_name") and not args.get("schedule"):
            if named == sender and peer == args["peer_name"]:
                return None
            return "its pair %s - %s is not the one the import task named (peer_name %r)" % (
                named, peer, str(args["peer_name"])[:200])
        return self._sweep_refusal(sender, rec, named, peer, args)

    def _sweep_refusal(self, sender, rec, named, peer, args):
        test, role = _test_of(rec.get("check"))
        params = rec.get("params") if isinstance(rec.get("params"), dict) else {}
        if named == sender:
            wanted = (test, role, peer)
        else:       # the server's record of the pair its client never measured (host: the client, peer: the server)
            wanted = (test, "server", named) if role == "client" and peer == sender else None
        step = params.get("step")
        for (run_id, sweep_name), entries in (self.sweeps.get(sender) or {}).items():
            if not _same_sweep(run_id, sweep_name, params, args):
                continue
            for entry in entries:
                if wanted is not None and entry[1:] == wanted and (not isinstance(step, int) or entry[0] == step):
                    return None
        return "its pair %s - %s (%s) is not one the controller scheduled for %s" % (
            named, peer, rec.get("check"), sender)


def _same_sweep(run_id, sweep_name, params, args):
    """A planned sweep that the record's own params and the collecting task's arguments do not contradict."""
    for given in (params, args if isinstance(args, dict) else {}):
        if given.get("run_id") is not None and str(given["run_id"]) != run_id:
            return False
        if given.get("sweep_name") is not None and str(given["sweep_name"]) != sweep_name:
            return False
    return True


def _screen_refusal(sender, rec, args, targeted):
    """Why a record carrying a group-screen marker is not admitted, or None."""
    test = group_screen.screen_of(rec)
    env = args.get("env") if isinstance(args, dict) else None
    planned = group_screen.parse_marker(env.get(group_screen.MARKER_ENV)) if isinstance(env, dict) else None
    if planned is None or planned != test:
        return "it carries a group-screen marker (%s) that the controller did not give this task" % (
            group_screen.MARKER_ENV)
    if rec.get("host") not in (None, sender):
        return "a screen test's record is its launcher's own"
    outside = [h for h in test["hosts"] if h not in targeted]
    if outside:
        return "its screen test names hosts this run does not target (%s)" % ", ".join(h[:200] for h in outside[:3])
    return None
