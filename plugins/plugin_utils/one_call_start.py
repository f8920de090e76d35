# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An async job's start in one call to the host, pipelined (private).

ansible-core never pipelines an async start (``async:`` with ``poll: 0``): it makes a remote temporary directory,
copies the module and ``async_wrapper`` into it, makes them executable and runs ``async_wrapper`` - five SSH
operations a host, ``forks`` hosts at a time (docs/scale-model.md). :class:`OneCallStart` does the same in one: the
interpreter reads a short program on its standard input (as a pipelined module does) that holds both files; it
makes the temporary directory under the shell's ``remote_tmp``, writes them there and becomes ``async_wrapper``
(``execv``) with the arguments ansible-core gives it. From there all is ansible-core's own: the same job id, job file
in the same ``async_dir``, the same answer (``ansible_job_id``, ``results_file``), ``async_wrapper`` removing the
directory when the job ends, ``async_status`` and aifabric.acceptance.job_wait reading the job.

Used only where the connection pipelines an ordinary module (``ansible_pipelining``, a become method that allows
it) and the remote files are not kept (``ANSIBLE_KEEP_REMOTE_FILES``), for a new-style (Python) module on a POSIX
shell; anything else starts as ansible-core starts it. Mixed into the action of every module the roles start as
async jobs (each has its own action, plugins/action/<module>.py, this class on ansible-core's normal action) and into perftest_sweep's.
Controller only.
"""

from __future__ import annotations

import base64
import secrets
import zlib

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import host_program

# The program the host's interpreter reads on its standard input: write async_wrapper and the module into a new
# temporary directory ("-tmp-" in its name: async_wrapper removes it when the job ends, as after ansible-core's own
# start) and become async_wrapper. Python 2.7 and 3.x (the interpreter a module runs with).
BOOT = r"""
import base64, os, sys, tempfile, zlib
top = os.path.expanduser(%(remote_tmp)r)
if not os.path.isdir(top):
    os.makedirs(top, 0o700)
where = tempfile.mkdtemp(prefix="ansible-tmp-aif-", dir=top)
paths = []
for name, data in ((%(wrapper_name)r, %(wrapper)r), (%(module_name)r, %(module)r)):
    path = os.path.join(where, name)
    with open(path, "wb") as out:
        out.write(zlib.decompress(base64.b64decode(data)))
    os.chmod(path, 0o700)
    paths.append(path)
sys.stdout.flush()
argv = [a.replace("{module}", paths[1]).replace("{python}", sys.executable) for a in %(argv)r]
os.execv(sys.executable, [sys.executable, paths[0]] + argv)
"""


def packed(data):
    """Bytes as the host's program takes them: zlib, then base64 (the chain's too: plugin_utils/job_chain.py)."""
    return to_text(base64.b64encode(zlib.compress(data, 6)))


def wrapper_argv(wrapper_source, jid, limit):
    """async_wrapper's arguments as the controller's ansible-core gives them, ``{module}`` for the module's path and
    ``{python}`` for the interpreter: ``<jid> <time_limit> <modulescript> <argsfile>`` (2.19) or ``<jid>
    <time_limit> <preserve_tmp> <module_path> <invocation_args> ...`` (2.21: the module's command after it), as its
    own usage line says."""
    if b"<preserve_tmp> <module_path>" in wrapper_source:
        return [jid, str(limit), "false", "{module}", "{python}", "{module}"]
    return [jid, str(limit), "{module}", "_"]


def boot_program(remote_tmp, wrapper_name, wrapper, module_name, module, argv):
    """The program that writes ``wrapper`` and ``module`` (bytes) under ``remote_tmp`` and runs the wrapper with
    ``argv`` (``{module}``: the module's path there, ``{python}``: the interpreter)."""
    return BOOT % {"remote_tmp": remote_tmp, "wrapper_name": wrapper_name, "wrapper": packed(wrapper),
                   "module_name": module_name, "module": packed(module), "argv": argv}


class OneCallStart:
    """Mix into an ActionBase subclass (before it): ``_execute_module(wrap_async=True)`` starts the job in one
    pipelined call where the connection allows it, else as ansible-core does."""

    def _execute_module(self, module_name=None, module_args=None, tmp=None, task_vars=None, persist_files=False,
                        delete_remote_tmp=None, wrap_async=False, ignore_unknown_opts=False):
        if not (wrap_async and host_program.possible(self)):
            return super()._execute_module(
                module_name=module_name, module_args=module_args, tmp=tmp, task_vars=task_vars,
                persist_files=persist_files, delete_remote_tmp=delete_remote_tmp, wrap_async=wrap_async,
                ignore_unknown_opts=ignore_unknown_opts)
        return self._start_in_one_call(module_name or self._task.action,
                                       self._task.args if module_args is None else module_args,
                                       task_vars or {}, ignore_unknown_opts)

    def _start_in_one_call(self, module_name, module_args, task_vars, ignore_unknown_opts):
        """ansible-core's async start (ActionBase._execute_module with wrap_async) with the transfers in the call."""
        self._update_module_args(module_name, module_args, task_vars, ignore_unknown_opts=ignore_unknown_opts)
        # async_wrapper reads the job directory from its environment, as ansible-core sets it for an async start
        self._task.environment.append({"ANSIBLE_ASYNC_DIR": self.get_shell_option("async_dir", default="~/.ansible_async")})
        try:
            bits, path = self._configure_module(module_name=module_name, module_args=module_args, task_vars=task_vars)
            if bits.module_style == "new":
                wrapper = host_program.Command(self, "ansible.legacy.async_wrapper", {}, task_vars)
        finally:
            self._task.environment.pop()
        if bits.module_style != "new":      # never for this collection's modules: ansible-core's own start
            return super()._execute_module(module_name=module_name, module_args=module_args, task_vars=task_vars,
                                           wrap_async=True, ignore_unknown_opts=ignore_unknown_opts)
        self._used_interpreter = bits.shebang
        shell = self._connection._shell
        with open(wrapper.path, "rb") as handle:
            argv = wrapper_argv(handle.read(), "j%d" % secrets.randbelow(999999999999), self._task.async_val)
        program = boot_program(
            self.get_shell_option("remote_tmp", default="~/.ansible/tmp"),
            shell.get_remote_filename(wrapper.path), wrapper.bits.b_module_data,
            "AnsiballZ_%s" % shell.get_remote_filename(path), bits.b_module_data, argv)
        started = wrapper.run(self, program, changed=True)      # as ansible-core's start answers (changed)
        shell.tmpdir = None         # the directory is async_wrapper's, which removes it
        return started
