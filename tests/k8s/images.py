# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container images as the process kubelet (tests/k8s/process_kubelet.py ``images=``) lays them over this
machine's files: only what decides how the operators' launchers behave - the image's /etc/ssh (client and server
configuration, host keys) and whether /run/sshd exists.

- ``tools_image``: a Debian/Ubuntu image with ``openssh-server`` and ``openssh-client`` installed from the
  distribution (what a user's tools image with nccl-tests usually is): the packaged default configuration of
  Debian 12's openssh 1:9.2p1 (sshd on port 22, ``UsePAM yes``, root by key only - PermitRootLogin's default
  prohibit-password; the client asks about unknown host keys: StrictHostKeyChecking's default ``ask``), host keys
  generated at package installation, and no /run/sshd (systemd makes it at boot: ``RuntimeDirectory=sshd``; a
  container has no systemd).
- ``mpi_operator_base_image``: kubeflow/mpi-operator's build/base/Dockerfile (v0.8.2) over that: ``mkdir -p
  /var/run/sshd``; in ssh_config StrictHostKeyChecking no, UserKnownHostsFile /dev/null, Port 2222; in sshd_config
  StrictModes no, Port 2222 (its ``ARG port=2222``).
"""

from __future__ import annotations

import os
import shutil
import subprocess

# Debian 12 openssh 1:9.2p1: the directives the packaged files set (all else is commented out in them)
DEBIAN_SSHD_CONFIG = """\
Include /etc/ssh/sshd_config.d/*.conf
KbdInteractiveAuthentication no
UsePAM yes
X11Forwarding yes
PrintMotd no
AcceptEnv LANG LC_*
Subsystem\tsftp\t/usr/lib/openssh/sftp-server
"""
DEBIAN_SSH_CONFIG = """\
Include /etc/ssh/ssh_config.d/*.conf

Host *
    SendEnv LANG LC_*
    HashKnownHosts yes
    GSSAPIAuthentication yes
"""
# build/base/Dockerfile's sed edits, as lines they leave in the files (port 2222)
MPI_OPERATOR_SSH_CONFIG = DEBIAN_SSH_CONFIG + """\
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    Port 2222
"""
MPI_OPERATOR_SSHD_CONFIG = DEBIAN_SSHD_CONFIG + "StrictModes no\nPort 2222\n"


class ImageError(RuntimeError):
    pass


def _etc_ssh(root, ssh_config, sshd_config):
    etc = os.path.join(root, "etc", "ssh")
    for sub in ("ssh_config.d", "sshd_config.d"):
        os.makedirs(os.path.join(etc, sub))
    with open(os.path.join(etc, "ssh_config"), "w") as handle:
        handle.write(ssh_config)
    with open(os.path.join(etc, "sshd_config"), "w") as handle:
        handle.write(sshd_config)
    if os.path.exists("/etc/ssh/moduli"):
        shutil.copy("/etc/ssh/moduli", os.path.join(etc, "moduli"))
    keygen = shutil.which("ssh-keygen")
    if not keygen:
        raise ImageError("ssh-keygen is needed to give an image its host keys")
    # the host keys openssh-server's postinst generates (ssh-keygen -A, here under root/etc/ssh)
    run = subprocess.run([keygen, "-A", "-f", root], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                         check=False)
    if run.returncode != 0:
        raise ImageError("ssh-keygen -A: %s" % run.stdout.decode("utf-8", "replace"))
    return etc


def tools_image(root):
    """The user's tools image (see the module docstring): its /etc/ssh and no /run/sshd."""
    return {"mounts": [(_etc_ssh(root, DEBIAN_SSH_CONFIG, DEBIAN_SSHD_CONFIG), "/etc/ssh")], "run_dirs": ["lock"]}


def mpi_operator_base_image(root):
    """mpioperator/base (build/base/Dockerfile): sshd and ssh on port 2222, no host key checking, /run/sshd."""
    return {"mounts": [(_etc_ssh(root, MPI_OPERATOR_SSH_CONFIG, MPI_OPERATOR_SSHD_CONFIG), "/etc/ssh")],
            "run_dirs": ["sshd", "lock"]}


NGC_MPI_PREFIX = "/usr/local/mpi"


def ngc_mpi_image(root):
    """An NGC-style image (nvcr.io/nvidia/pytorch, the nccl-tests images built on it): Open MPI installed under
    /usr/local/mpi (bin/mpirun, bin/orted) and only its bin on the image's PATH - none of it where sshd's
    non-interactive PATH looks (/usr/local/bin, /usr/bin, /bin): this machine's Open MPI binaries copied under
    NGC_MPI_PREFIX, and this machine's orted hidden from /usr/bin by a stand-in that is not it (exit 127, as a
    shell says for a command it cannot find). Returns (image, the PATH entry to put first)."""
    mpirun, orted = shutil.which("mpirun"), shutil.which("orted")
    if not mpirun or not orted:
        raise ImageError("Open MPI's mpirun and orted are needed (apt-get install openmpi-bin)")
    bindir = os.path.join(root, "mpi", "bin")
    os.makedirs(bindir)
    shutil.copy(os.path.realpath(mpirun), os.path.join(bindir, "mpirun"))
    shutil.copy(os.path.realpath(orted), os.path.join(bindir, "orted"))
    absent = os.path.join(root, "no-orted")
    with open(absent, "w") as handle:
        handle.write("#!/bin/sh\necho \"orted: not in this image (Open MPI is in %s)\" >&2\nexit 127\n"
                     % NGC_MPI_PREFIX)
    os.chmod(absent, 0o755)
    return ({"mounts": [(os.path.join(root, "mpi"), NGC_MPI_PREFIX), (absent, orted)], "run_dirs": ["lock"]},
            NGC_MPI_PREFIX + "/bin")
