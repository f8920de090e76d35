# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The hardware-profile options of the GPU benchmark modules (spec: expectations.PROFILE_SPEC).
    DOCUMENTATION = r"""
options:
  profile:
    description:
      - Hardware profile name, V(auto) (detected from the GPU model and the number of GPUs per node) or V(none).
      - The profiles shipped with the collection and how to add your own are described in C(docs/expectations.md).
    type: str
    default: auto
  profiles:
    description: Extra or overriding hardware profiles, usually loaded on the controller from a YAML file.
    type: dict
    default: {}
"""
