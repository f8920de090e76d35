# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``main()`` of the collective benchmark modules, nccl_test and hccl_test (private).

Both run one binary per collective over a size sweep, one run tagged across hosts (launch.py); their tool adapter's
``OPTIONS`` holds the options of the run (tools/nccl_test.py, tools/hccl_test.py, sharing tools/_collective.py's):

- ``SPEC`` - what both modules add to the adapter's ``OPTIONS``: the _mpirun.COLLECTIVE_SPEC options that are
  the module's plumbing, not the run's (``hosts``, ``run_id`` and import mode's ``from_output``,
  ``collective``, ``node_count``; documented in the ``_collective_launch`` doc fragment);
- ``RANGES`` - the ranges of the shared options whose bounds do not differ between the tools;
- ``main(module_class, name, spec, ranges, import_records, run)`` - the whole ``main()``: builds the module
  (``module``: argspec.module, ``SPEC`` plus ``spec``, the adapter's ``OPTIONS`` and the module's own, every range
  checked first; import mode and ``hosts`` exclusive) and runs it through modmain.run with ``USER_ERRORS``, the
  exception types whose message is the whole answer (bad options and expectations, without a traceback).
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, expectations, launch, modmain
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective, _mpirun

SPEC = dict((name, spec) for name, spec in _mpirun.COLLECTIVE_SPEC.items() if name not in _collective.LAUNCH_OPTIONS)

RANGES = dict(_mpirun.COLLECTIVE_RANGES, step_factor=argspec.POSITIVE, root=argspec.NON_NEGATIVE,
              ranks_per_node=argspec.NON_NEGATIVE)
USER_ERRORS = (_mpirun.OptionError, expectations.ExpectationError)


def module(module_class, spec, ranges):
    """The module, built from the shared and its own options, every range checked (see the module docstring)."""
    return argspec.module(
        module_class, dict(RANGES, **ranges), argument_spec=dict(SPEC, **spec),
        mutually_exclusive=[("from_output", "hosts")], supports_check_mode=True)


def main(module_class, name, spec, ranges, import_records, run_tagged):
    """A collective module's ``main()``: the module (``module``) run by ``run``."""
    run(module(module_class, spec, ranges), name, import_records, run_tagged)


def run(module, name, import_records, run_tagged, user_errors=USER_ERRORS):
    """The body of a module that launches one tagged run across hosts (nccl_test, hccl_test).

    ``import_records(path, params)`` serves import mode (``from_output``); ``run_tagged(module, params, tag)`` returns
    ``(records, cmds, runs)``. Exits the module (modmain.run): the records, or a failure that says what to do, and
    after an interrupt which run id the other hosts' cleanup needs. ``user_errors``: exception types that are bad
    parameters (their message is the whole answer, no traceback).
    """
    p = module.params
    tag = p["run_id"] or launch.new_tag()

    def body(module):
        launch.check_tag(tag)
        if p["from_output"]:
            return dict(changed=False, cmd=[], run_id=tag, results=import_records(p["from_output"], p))
        records, cmds, runs = run_tagged(module, p, tag)
        return dict(changed=False, cmd=cmds, runs=runs, run_id=tag, results=records)

    modmain.run(module, name, body, user_errors=user_errors, interrupt_fields={"run_id": tag},
                interrupt_note=" (the run's processes on this host were stopped; run aifabric.acceptance.cleanup "
                               "with run_id %s on the other hosts)" % tag)
