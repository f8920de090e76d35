# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test harnesses' reaping of what a dead run left (run as root) believes only a state it could have written
itself: a state planted in a shared directory by another user, or naming a directory or link that is not the run's
own, deletes nothing. Everything here lives in this test's own temporary directory."""

from __future__ import annotations

import json
import os

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.k8s import process_kubelet


def _plant(base, entry, state, mode=0o700, state_file=netns.STATE_FILE):
    directory = base / entry
    directory.mkdir()
    (directory / state_file).write_text(json.dumps(state))
    os.chmod(str(directory), mode)
    return directory


def _dead_state(tag, **extra):
    return dict({"owner_pid": 2 ** 22 + 7, "owner_start": 0, "tag": tag}, **extra)


def test_a_planted_fleet_state_deletes_nothing(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    tag = netns.PREFIX + "zz01"
    # another user could write it (world-writable directory), or it names a directory that is not its own
    _plant(tmp_path, tag + "-a", _dead_state(tag, dir=str(victim), bridge=tag + "br", hosts=[]), mode=0o777)
    _plant(tmp_path, tag + "-b", _dead_state(tag, dir=str(victim), bridge=tag + "br", hosts=[]))
    _plant(tmp_path, tag + "-c", _dead_state(tag, dir=str(tmp_path / (tag + "-c")), bridge="eth0", hosts=[]))
    assert netns.reap_stale(str(tmp_path)) == []
    assert (victim / "keep").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == [tag + "-a", tag + "-b", tag + "-c", "victim"]


def test_a_planted_kubelet_state_deletes_nothing(tmp_path):
    tag = process_kubelet.PREFIX + "zz02"
    kubelet = process_kubelet.STATE_FILE
    _plant(tmp_path, tag + "-a", _dead_state(tag, bridge=tag + "br", namespaces=[]), mode=0o777, state_file=kubelet)
    _plant(tmp_path, tag + "-b", _dead_state(tag, bridge="docker0", namespaces=[]), state_file=kubelet)
    _plant(tmp_path, tag + "-c", _dead_state(tag, bridge=tag + "br", namespaces=["cni-1234"]), state_file=kubelet)
    # the same state, written as a dead run of ours would: believed (so the refusals above are the checks' doing)
    assert netns.own_state(str(tmp_path), tag + "-c", kubelet, process_kubelet.PREFIX)["tag"] == tag
    assert process_kubelet.reap_stale(str(tmp_path)) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [tag + "-a", tag + "-b", tag + "-c"]


def test_a_link_in_place_of_the_directory_is_not_followed(tmp_path):
    tag = netns.PREFIX + "zz03"
    real = _plant(tmp_path, "elsewhere", _dead_state(tag, bridge=tag + "br", hosts=[]))
    os.symlink(str(real), str(tmp_path / (tag + "-x")))
    assert netns.own_state(str(tmp_path), tag + "-x", netns.STATE_FILE, netns.PREFIX) is None
    assert netns.own_state(str(tmp_path), "elsewhere", netns.STATE_FILE, netns.PREFIX) is None   # not its tag's entry


def test_a_state_of_our_own_is_believed(tmp_path):
    tag = netns.PREFIX + "zz04"
    _plant(tmp_path, tag + "-ok", _dead_state(tag, bridge=tag + "br", hosts=[]))
    assert netns.own_state(str(tmp_path), tag + "-ok", netns.STATE_FILE, netns.PREFIX)["tag"] == tag
