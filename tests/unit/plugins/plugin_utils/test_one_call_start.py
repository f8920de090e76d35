# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An async start in one call (plugin_utils/one_call_start.py): the program a host's interpreter reads on its
standard input writes async_wrapper and the module into a new temporary directory and becomes async_wrapper - here
the installed ansible-core's own async_wrapper, run for real, and a module that answers as a module does: the start
answers as ansible-core's start does, the job file gets the module's result, and the directory is gone after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from ansible.modules import async_wrapper

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import one_call_start

MODULE = b"""#!%s
import json
print(json.dumps({"changed": False, "results": [{"check": "env.cpu", "status": "pass"}], "msg": "done"}))
""" % sys.executable.encode()


def _wrapper_source():
    with open(async_wrapper.__file__, "rb") as handle:
        return handle.read()


def test_the_wrapper_gets_the_arguments_its_usage_line_names():
    source = _wrapper_source()
    argv = one_call_start.wrapper_argv(source, "j42", 300)
    if b"<preserve_tmp> <module_path>" in source:          # ansible-core 2.21
        assert argv == ["j42", "300", "false", "{module}", "{python}", "{module}"]
    else:                                                   # 2.19: <jid> <time_limit> <modulescript> <argsfile>
        assert b"<jid> <time_limit> <modulescript> <argsfile>" in source
        assert argv == ["j42", "300", "{module}", "_"]


def test_one_call_writes_both_files_starts_the_job_and_leaves_nothing_behind(tmp_path):
    remote_tmp, jobs = tmp_path / "remote-tmp", tmp_path / "jobs"
    program = one_call_start.boot_program(
        str(remote_tmp), "async_wrapper.py", _wrapper_source(), "AnsiballZ_env_probe.py", MODULE,
        one_call_start.wrapper_argv(_wrapper_source(), "j42", 60))
    env = dict(os.environ, ANSIBLE_ASYNC_DIR=str(jobs), PYTHONPATH=os.pathsep.join(sys.path))
    started = subprocess.run([sys.executable], input=program.encode(), env=env, capture_output=True, timeout=60,
                             check=False)
    assert started.returncode == 0, started.stderr
    answer = json.loads(started.stdout.decode().strip().splitlines()[-1])
    assert answer["started"] in (1, True) and answer["finished"] in (0, False), answer
    assert answer["ansible_job_id"].startswith("j42.") and answer["results_file"] == str(jobs / answer["ansible_job_id"])
    deadline = time.monotonic() + 30
    result = {}
    while time.monotonic() < deadline:
        if os.path.exists(answer["results_file"]):
            with open(answer["results_file"]) as handle:
                text = handle.read()
            result = json.loads(text) if text.strip() else {}
            if "started" not in result and result:
                break
        time.sleep(0.1)
    assert result["results"] == [{"check": "env.cpu", "status": "pass"}] and result["msg"] == "done", result
    # async_wrapper removed the directory the call made ("-tmp-" in its name, as ansible-core's own)
    while time.monotonic() < deadline and os.listdir(remote_tmp):
        time.sleep(0.1)
    assert os.listdir(remote_tmp) == []
