# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every command and variable of the documentation works as written (README.md and docs/*.md).

- Each `ansible-playbook` and `make` command - a line of a code block (with its continuation lines) or a code span
  that starts with one, after `VAR=value` assignments - is parsed as the tool parses it: ansible-playbook's own
  argument parser, `make -n` for the target. Every playbook it names exists, and all of them pass
  `ansible-playbook --syntax-check` with this collection on ANSIBLE_COLLECTIONS_PATH (every action, module and role
  resolves); every `-e` variable is one the collection reads (plugins/plugin_utils/inventory_vars.Vocabulary().names for
  the names with the collection's prefixes, else the named playbook uses it); every `VAR=` of a make command is
  one the Makefile uses.
- The commands that need no hardware - report.yml and baseline.yml, which run on the controller on files - run as
  written (their placeholders and /tmp paths replaced by the test's own), against a real run's results.json.
- Every backticked name with one of the collection's prefixes (inventory_vars.Vocabulary.ours) is a variable the
  collection reads, unless it names another thing of the collection (a module, role, playbook, plugin file, module
  option, acceptance_expect key, inventory group, set_stats key) or the page says it is not one (below).

Before: `ansible-playbook playbooks/report.yml ...` (docs/report.md, docs/history.md) failed from a checkout (rc 4,
the report action unresolved); docs/user-guide.md documented `hccl_timeout_s`, which the run refuses as unread;
docs/security.md named `rdma_position_port` (the setting is `rdma_perftest.position_port`)."""

from __future__ import annotations

import functools
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml
from ansible.cli.playbook import PlaybookCLI
from ansible.parsing.splitter import parse_kv
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import inventory_vars
from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path
from ansible_collections.aifabric.acceptance.tests.unit import test_vocabulary
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read
from ansible_collections.aifabric.acceptance.tests.unit.test_docs import _CODE_SPAN, _FENCE, ROOT, user_pages

BIN = os.path.dirname(sys.executable)
MAKEFILE = os.path.join(ROOT, "Makefile")
RESULTS = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "fixtures", "golden", "h200x2.results.json")
TIMEOUT_S = 300

# Names with the collection's prefixes that a page mentions as what they are not - a variable the collection
# reads -, and why. (docs/glossary.md names options without their role's prefix: it is the vocabulary, not left out
# of the commands' check.)
NOT_VARIABLES = {
    ("README.md", "expect_gpu_count"): "the example of a name the check of the inventory refuses",
    ("docs/user-guide.md", "expect_gpu_count"): "the example of a name the check of the inventory refuses",
    ("docs/env_probe.md", "gpu_idle"): "an nvidia-smi clocks event reason",
    ("docs/gpu.md", "nccl_algo"): "a fact of an nccl-tests record",
    ("docs/hccl.md", "hccl_collectives"): "an old playbook variable, listed with its place now",
    ("docs/hccl.md", "hccl_max_bytes"): "an old playbook variable, listed with its place now",
    ("docs/hccl.md", "hccl_mpi_flavour"): "an old playbook variable, listed with its place now",
    ("docs/hccl.md", "hccl_run_tag"): "an old playbook variable, gone",
    ("docs/results.md", "perftest_bw"): "a series family of perftest records",
    ("docs/results.md", "perftest_lat"): "a series family of perftest records",
    ("docs/rdma.md", "perftest_bw"): "a series family of perftest records",
    ("docs/rdma.md", "perftest_lat"): "a series family of perftest records",
    ("docs/architecture.md", "nccl_multinode"): "a former Kubernetes kind, listed with its new name",
    ("docs/kubernetes.md", "nccl_multinode"): "a former Kubernetes kind, listed with its new name",
}
# table columns whose cells are a record's facts or metrics, or exported metric names, not variables
_RECORD_COLUMNS = re.compile(r"^(facts|metrics|metric\b.*|labels)$")
_ASSIGN = re.compile(r"^[A-Z][A-Z0-9_]*=")
_START = re.compile(r"^(?:[A-Z][A-Z0-9_]*=\S*\s+)*(ansible-playbook|make)(?=\s|$)")
_PLACEHOLDER = re.compile(r"<[^<>`]*>")
_LEAD_NAME = re.compile(r"^(?:-e\s+)?([a-z][a-z0-9_]*)(?=$|[.:=\[ ,(])")
_FILE_NAME = re.compile(r"^[a-z][a-z0-9_]*\.(py|h|c|yml|json|prom|sh)(:[0-9]+)?$")


def _rel(path):
    return os.path.relpath(path, ROOT)


def _complete(text):
    if text.rstrip().endswith("\\"):
        return False
    try:
        shlex.split(text, comments=True)
    except ValueError:          # a quote that the next line closes
        return False
    return True


def _code_block_commands(lines, start):
    """(line number, command) of the commands of the code block that starts after line index ``start``, and the index
    of its closing fence."""
    fence = _FENCE.match(lines[start]).group(2)
    out, i = [], start + 1
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match and match.group(2)[0] == fence[0] and len(match.group(2)) >= len(fence):
            return out, i
        text = re.sub(r"^\$\s+", "", lines[i].strip())
        if _START.match(text):
            first = i
            while not _complete(text) and i + 1 < len(lines) and not _FENCE.match(lines[i + 1]):
                i += 1
                text = text.rstrip().rstrip("\\").rstrip() + " " + lines[i].strip()
            out.append((first + 1, text))
        i += 1
    return out, i


def _names_something(text):
    """A span that names a playbook or a target (not `ansible-playbook --check`, which names an option)."""
    try:
        return any(not arg.startswith("-") for arg in split(text)[1][1:])
    except ValueError:
        return False


def commands(path):
    """(line number, text) of every ansible-playbook and make command of a page."""
    lines = read(path).splitlines()
    out, i = [], 0
    while i < len(lines):
        if _FENCE.match(lines[i]):
            found, i = _code_block_commands(lines, i)
            out.extend(found)
        else:
            for span in _CODE_SPAN.finditer(lines[i]):
                text = span.group(0).strip("`").strip()
                if _START.match(text) and _names_something(text):
                    out.append((i + 1, text))
        i += 1
    return out


def split(text):
    """The argv of a command (placeholders such as <run> replaced by a word), without its VAR=value prefix."""
    argv = shlex.split(_PLACEHOLDER.sub("PLACEHOLDER", text), comments=True)
    env = {}
    while argv and _ASSIGN.match(argv[0]):
        name, _sep, value = argv.pop(0).partition("=")
        env[name] = value
    return env, argv


def all_commands():
    return [(_rel(page), number, text) for page in user_pages() for number, text in commands(page)]


def _ids(entry):
    return "%s:%d" % (entry[0], entry[1])


@functools.lru_cache(maxsize=None)
@functools.lru_cache(maxsize=None)
def vocabulary():
    return inventory_vars.Vocabulary(ROOT)


def known_names():
    return vocabulary().names


def playbook_path(name):
    """The file of a playbook named on a command line (FQCN or path from the checkout), or None."""
    rel = os.path.join("playbooks", name.split(".", 2)[2] + ".yml") if name.startswith("aifabric.acceptance.") else name
    path = os.path.normpath(os.path.join(ROOT, rel))
    return path if os.path.isfile(path) else None


def _uses(path, name):
    text = "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in read(path).splitlines())
    return re.search(r"(?<![\w.])%s(?!\w)" % re.escape(name), text) is not None


def extra_var_names(value):
    """The variable names of one -e value (key=value words, or YAML/JSON), None for @file (the user's file); a word
    that is no key=value is a problem."""
    if value.startswith("@"):
        return None
    if value.lstrip().startswith("{"):
        return sorted(str(k) for k in yaml.safe_load(value))
    pairs = parse_kv(value)
    if "_raw_params" in pairs:
        raise ValueError("-e %r: %r is no name=value" % (value, pairs["_raw_params"]))
    return sorted(pairs)


def variable_problem(name, playbook):
    """Why ``name`` given with -e to ``playbook`` (a file) is not read, or None."""
    if name.startswith("ansible_"):
        return None                     # Ansible's own
    if vocabulary().ours(name):
        return None if name in known_names() else "-e %s: the collection reads no such variable" % name
    if playbook and _uses(playbook, name):
        return None
    return "-e %s: %s does not use it" % (name, _rel(playbook)) if playbook else "-e %s: no playbook to read it" % name


def playbook_argv_problems(argv):
    """(problems, playbook files) of an ansible-playbook argv (without the program), parsed by ansible-playbook's own
    argument parser."""
    cli = PlaybookCLI(["ansible-playbook"] + argv)
    cli.init_parser()
    try:
        options = cli.parser.parse_args(argv)
    except SystemExit:
        return ["ansible-playbook refuses the arguments %s" % argv], []
    problems, playbooks = [], []
    for name in options.args:
        path = playbook_path(name)
        if path is None:
            problems.append("no playbook %s" % name)
        playbooks.append(path)
    for value in options.extra_vars or []:
        try:
            names = extra_var_names(value)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        for name in names or []:
            for path in playbooks or [None]:
                problem = variable_problem(name, path)
                if problem:
                    problems.append(problem)
    return problems, [p for p in playbooks if p]


def _makefile_default(name):
    match = re.search(r"^%s\s*\?=\s*(\S+)" % name, read(MAKEFILE), re.M)
    return match.group(1) if match else None


def _make_env():
    env = dict(os.environ)
    for name in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"):
        env.pop(name, None)
    return env


@functools.lru_cache(maxsize=None)
def make_target_problem(target):
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-n", "--no-print-directory", target], cwd=ROOT, env=_make_env(), capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    return None if done.returncode == 0 else "make %s: %s" % (target, done.stderr.strip()[-300:])


def make_argv_problems(argv):
    """(problems, playbook files) of a make argv (without the program)."""
    problems, playbooks = [], []
    assigns = dict(a.split("=", 1) for a in argv if "=" in a and not a.startswith("-"))
    makefile = read(MAKEFILE)
    for target in [a for a in argv if "=" not in a and not a.startswith("-")]:
        problem = make_target_problem(target)
        if problem:
            problems.append(problem)
    for name in assigns:
        if not re.search(r"\$\(%s\)|\$\$%s\b|^%s\s*[?:]?=" % (name, name, name), makefile, re.M):
            problems.append("make %s=: the Makefile has no such variable" % name)
    playbook = assigns.get("PLAYBOOK") or _makefile_default("PLAYBOOK")
    if playbook_path(playbook) is None:
        problems.append("PLAYBOOK=%s: no such playbook" % playbook)
    if "ARGS" in assigns:
        more, _books = playbook_argv_problems(shlex.split(assigns["ARGS"]) + [playbook])
        problems.extend(more)
    playbooks.append(playbook_path(playbook))
    return problems, [p for p in playbooks if p]


def command_problems(text):
    _env, argv = split(text)
    if argv[0] == "make":
        return make_argv_problems(argv[1:])
    return playbook_argv_problems(argv[1:])


def test_the_pages_have_commands():
    found = all_commands()
    assert len(found) > 30 and {split(t)[1][0] for _p, _n, t in found} == {"ansible-playbook", "make"}


@pytest.mark.parametrize("entry", all_commands(), ids=_ids)
def test_each_command_names_what_exists(entry):
    problems, _books = command_problems(entry[2])
    assert problems == [], entry[2]


def _collections():
    """Where this collection is found: the tree itself (as the integration tests run it), else its install by
    .ci/collection.py (what `make acceptance` uses)."""
    found = collections_path()
    if found:
        return found
    return subprocess.run([sys.executable, os.path.join(ROOT, ".ci", "collection.py"), BIN], capture_output=True,
                          text=True, timeout=900, check=True).stdout.strip()


def _ansible_env(tmp_path):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "AIFABRIC_")))
    env.update({"ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": _collections(),
                "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "AIFABRIC_REPORTS_ROOT": str(tmp_path / "reports"),
                "PYTHONDONTWRITEBYTECODE": "1"})
    return env


def test_every_playbook_of_the_docs_passes_the_syntax_check(tmp_path):
    """All of them in one ansible-playbook run: every action, module, role and task file resolves."""
    books = sorted(set(b for _p, _n, text in all_commands() for b in command_problems(text)[1]))
    assert len(books) >= 8, books
    done = subprocess.run([os.path.join(BIN, "ansible-playbook"), "--syntax-check", "-i", "localhost,"] + books,
                          cwd=ROOT, env=_ansible_env(tmp_path), capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


# --- the commands that need no hardware run as written ------------------------------------------------------------

RUNNABLE = ("report.yml", "baseline.yml")


def _runnable():
    out = []
    for page, number, text in all_commands():
        env, argv = split(text)
        # with its inputs (a span such as `ansible-playbook playbooks/report.yml` names the playbook, not a run)
        if argv[0] == "ansible-playbook" and "-e" in argv and \
                any((playbook_path(a) or "").endswith(RUNNABLE) for a in argv):
            out.append((page, number, text))
    return out


def _concrete(argv, work):
    """The argv with the test's files for its placeholders and its directories for absolute /tmp paths."""
    out = []
    for arg in argv:
        name, sep, value = arg.partition("=")
        if sep and "PLACEHOLDER" in value:
            results = os.path.join(work, "reports", "latest", "results.json")
            arg = "%s=%s" % (name, "latest" if name == "baseline_run" else results)
        elif not arg.startswith(("-", "aifabric.")) and playbook_path(arg):
            arg = playbook_path(arg)                # a path from the checkout, where the pages run it
        elif sep and value.startswith("/tmp/"):
            arg = "%s=%s" % (name, os.path.join(work, "out", value[len("/tmp/"):]))
        out.append(arg)
    return out


def _order(entry):
    """report.yml before baseline.yml (a baseline is frozen from the store the reports wrote), a report held against a
    baseline last."""
    text = entry[2]
    return 2 if "report_baseline" in text else 1 if "baseline.yml" in text or ".baseline " in text else 0


def test_the_report_and_baseline_commands_run_as_written(tmp_path):
    """Run from a checkout as the pages say (this collection on ANSIBLE_COLLECTIONS_PATH, the checkout's
    ansible.cfg), in a directory whose reports/latest is a real run's."""
    found = sorted(_runnable(), key=_order)
    assert len(found) >= 4, found
    work = tmp_path / "work"
    (work / "reports" / "latest").mkdir(parents=True)
    shutil.copy(RESULTS, str(work / "reports" / "latest" / "results.json"))
    env = _ansible_env(tmp_path)
    for page, number, text in found:
        argv = _concrete(split(text)[1], str(work))
        argv[0] = os.path.join(BIN, "ansible-playbook")
        done = subprocess.run(argv, cwd=str(work), env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False)
        assert done.returncode == 0, "%s:%d: %s\n%s" % (page, number, text, (done.stdout + done.stderr)[-3000:])


# --- variable names in the text ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def other_names():
    """The names of the collection's other things: modules, action/filter/util plugins, roles, playbooks, module
    options (with suboptions), acceptance_expect keys, the shipped inventories' groups, set_stats keys."""
    names = set(inventory_vars.EXPECT_KEYS)
    for sub in ("modules", "action", "filter", "callback", "module_utils", "module_utils/tools", "plugin_utils"):
        names.update(os.path.splitext(f)[0] for f in os.listdir(os.path.join(ROOT, "plugins", sub)))
    names.update(os.listdir(os.path.join(ROOT, "roles")))
    names.update(os.path.splitext(f)[0] for f in os.listdir(os.path.join(ROOT, "playbooks")))
    names.update(name for name, _kind, _where in test_vocabulary.all_module_options())
    for path in glob.glob(os.path.join(ROOT, "inventories", "*", "hosts.yml")):
        names.update(_groups(yaml.safe_load(read(path)).get("all") or {}))
    for path in glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")):
        names.update(_set_stats_keys(yaml.safe_load(read(path))))
    return frozenset(names)


def _groups(node):
    for name, child in ((node or {}).get("children") or {}).items():
        yield name
        yield from _groups(child)


def _set_stats_keys(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "ansible.builtin.set_stats" and isinstance(value, dict):
                yield from value.get("data") or {}
            else:
                yield from _set_stats_keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _set_stats_keys(item)


def _table_cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def mentioned_names(path):
    """(line number, name) of each code span of a page whose leading word has one of the collection's prefixes (a
    span `name`, `name.key`, `name: value`, `name=value`, `-e name=...`), outside code blocks, record columns of
    tables, file names and `old -> new` renamings."""
    out, fence, header = [], None, None
    for number, line in enumerate(read(path).splitlines(), 1):
        match = _FENCE.match(line)
        if fence or match:
            if match and (not fence or (match.group(2)[0] == fence[0] and len(match.group(2)) >= len(fence))):
                fence = None if fence else match.group(2)
            continue
        skip = ()
        if line.lstrip().startswith("|"):
            cells = _table_cells(line)
            if header is None:
                header = [c.lower() for c in cells]
            skip = [i for i, title in enumerate(header) if _RECORD_COLUMNS.match(title)]
        else:
            header = None
        for span in _CODE_SPAN.finditer(line):
            column = line[:span.start()].count("|") - 1 if line.lstrip().startswith("|") else -1
            text = span.group(0).strip("`").strip()
            lead = _LEAD_NAME.match(text)
            if not lead or column in skip or _FILE_NAME.match(text) or re.match(r"\s*(->|→)", line[span.end():]):
                continue
            if vocabulary().ours(lead.group(1)) and not lead.group(1).endswith("_"):   # (a prefix: `probe_`)
                out.append((number, lead.group(1)))
    return out


def _text_pages():
    return [p for p in user_pages() if _rel(p) != os.path.join("docs", "glossary.md")]


@pytest.mark.parametrize("path", _text_pages(), ids=_rel)
def test_every_variable_a_page_names_is_read(path):
    page = _rel(path)
    problems = sorted(set("%s:%d: `%s`" % (page, number, name) for number, name in mentioned_names(path)
                          if name not in known_names() and name not in other_names()
                          and (page, name) not in NOT_VARIABLES))
    assert problems == [], "names the collection does not read (a variable it reads, or NOT_VARIABLES with the reason)"


def test_each_exception_is_still_on_its_page():
    stale = [key for key in NOT_VARIABLES if key[1] not in [n for _l, n in mentioned_names(os.path.join(ROOT, key[0]))]]
    assert stale == []


# the checks themselves, on text made here: a check that never fails would pass any page


def test_commands_are_found_joined_and_judged(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("Run `make acceptance INVENTORY=x`, not `make`-less text.\n\n```bash\n"
                    "ansible-playbook aifabric.acceptance.report -e report_input=<run>/results.json \\\n"
                    "    -e '{\"report_drift_pins\":\n       {\"a\": 1}}'   # a comment\n"
                    "A=1 ansible-playbook playbooks/nope.yml -e acceptance_nonsense=1 -e report_input=x\n```\n")
    found = commands(str(page))
    assert [n for n, _t in found] == [1, 4, 7]
    assert found[1][1].endswith("{\"a\": 1}}'   # a comment")
    assert command_problems(found[1][1])[0] == []
    problems, _books = command_problems(found[2][1])
    assert problems == ["no playbook playbooks/nope.yml", "-e acceptance_nonsense: the collection reads no such variable",
                        "-e report_input: no playbook to read it"]


def test_make_commands_are_judged():
    assert make_argv_problems(["acceptance", "PLAYBOOK=playbooks/gpu.yml", "ARGS=-e acceptance_hosts=all"])[0] == []
    problems = make_argv_problems(["acceptance", "PLAYBOOK=playbooks/gpux.yml", "INVENTRY=x"])[0]
    assert problems == ["make INVENTRY=: the Makefile has no such variable", "PLAYBOOK=playbooks/gpux.yml: no such playbook"]
    assert make_argv_problems(["no-such-target"])[0][0].startswith("make no-such-target: ")


def test_variable_names_in_spans_are_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("Set `acceptance_expect.gpu_count`, `-e gpu_nonsense=1`, `rdma_x: 1` and `plain`;\n"
                    "`hccl_old` -> `hccl_options.x`; `aifabric_k8s_entry.py`.\n\n| metrics | variable |\n|---|---|\n"
                    "| `gpu_count_metric` | `nccl_options` |\n")
    assert mentioned_names(str(page)) == [(1, "acceptance_expect"), (1, "gpu_nonsense"), (1, "rdma_x"),
                                          (2, "hccl_options"), (6, "nccl_options")]


def _how_from_a_checkout(text):
    return "ANSIBLE_COLLECTIONS_PATH" in text or "user-guide.md#install" in text or "](#install)" in text


@pytest.mark.parametrize("path", user_pages(), ids=_rel)
def test_a_page_with_ansible_playbook_commands_says_how_to_run_them_from_a_checkout(path):
    """From a checkout an ansible-playbook command needs the collection on ANSIBLE_COLLECTIONS_PATH (`make` puts it
    there itself): without it the collection's actions, modules and roles do not resolve (rc 4). A page that gives
    such a command says so, or links to the user guide's install section, which does."""
    direct = [number for number, text in commands(path)
              if split(text)[1][0] == "ansible-playbook" and {"-i", "-e"} & set(split(text)[1])]
    assert not direct or _how_from_a_checkout(read(path)), "ansible-playbook commands at lines %s" % direct
