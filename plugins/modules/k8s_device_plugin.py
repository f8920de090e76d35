#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_device_plugin
short_description: Deploy the RDMA shared device plugin on Kubernetes and verify that every node exposes its resource
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Deploys the Mellanox/NVIDIA C(k8s-rdma-shared-dev-plugin) - a ConfigMap with C(config.json)
    (C(periodicUpdateInterval), C(configList) of C(resourceName), C(resourcePrefix), C(rdmaHcaMax) and C(selectors))
    and a privileged host-network DaemonSet with the device-plugin, plugin-registry and C(/dev) mounts - creating or
    merge-patching each object only where it differs (idempotent).
  - When O(resource_list) is empty, the selectors are generated from the env probe's C(rdma.port) records of the nodes
    (O(probe_records)) - vendor and device id from C(/sys/class/infiniband/<dev>/device/{vendor,device}), the link
    layer, and per rail (O(per_rail)) the netdev names - so the config selects exactly the ports the nodes have.
  - Then verifies itself (O(verify)) - the DaemonSet is ready on every node of O(hosts) and every node's allocatable
    shows every resource at the count the config publishes (C(rdmaHcaMax); right after a config change the node
    still shows the old count for a while, which is waited for) - and returns one C(k8s.rdma_device_plugin) record per node and resource
    (C(host) = node name). A failing record names the likely cause - node missing, node not selected (label or
    taint), no plugin pod, plugin pod crash-looping (with its last log lines), selector matching no device, port in
    the wrong link layer, devices matched but none exposed.
  - The config's SHA-256 is a pod-template annotation, so a changed config rolls the plugin pods (the plugin reads its
    config only at start).
  - With O(render_dir) the manifests are written as files and nothing is applied (no cluster needed).
  - O(state=absent) deletes the DaemonSet and the ConfigMap, but only objects this collection manages
    (label C(app.kubernetes.io/managed-by=aifabric.acceptance)); an existing plugin deployed by another tool is never
    changed unless O(adopt=true).
  - "Runs on the controller (C(delegate_to: localhost)) and needs the C(kubernetes) Python client there; see the
    collection's C(docs/kubernetes.md)."
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._k8s_auth, aifabric.acceptance._attributes.results]
attributes:
  check_mode:
    support: full
    details:
      - Reads the live objects and returns what it would create, update or delete (O(state=absent)) and no records;
        changes nothing. With O(render_dir), returns the files it would write and writes none.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: A second run with the same arguments sends no change (every object already holds the desired fields).
options:
  state:
    description: V(present) deploys (or updates) the plugin and verifies it; V(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
  namespace:
    description: Namespace of the ConfigMap and the DaemonSet.
    type: str
    default: kube-system
  name:
    description: Name of the DaemonSet (and of the pods' C(name) label).
    type: str
    default: rdma-shared-dp-ds
  config_map:
    description: Name of the ConfigMap holding C(config.json).
    type: str
    default: rdma-devices
  image:
    description: Image of the plugin, without tag.
    type: str
    default: ghcr.io/mellanox/k8s-rdma-shared-dev-plugin
  tag:
    description: Image tag (a release of the plugin). Empty uses O(image) as it is.
    type: str
    default: v1.5.3
  image_pull_policy:
    description: C(imagePullPolicy) of the plugin container.
    type: str
    choices: [Always, IfNotPresent, Never]
    default: IfNotPresent
  image_pull_secrets:
    description: Names of image pull Secrets in O(namespace).
    type: list
    elements: str
    default: []
  periodic_update_interval_s:
    description: C(periodicUpdateInterval) in seconds; V(0) disables the plugin's periodic device re-scan.
    type: int
    default: 60
  resource_list:
    description:
      - The C(configList) entries. Empty - generate them from O(probe_records).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: C(resourceName) (letters, digits, C(_)); pods request C(<prefix>/<name>).
        type: str
        required: true
      prefix:
        description: C(resourcePrefix). Default O(resource_prefix).
        type: str
      rdma_hca_max:
        description: C(rdmaHcaMax), the number of pods that may share the devices of a node. Default O(rdma_hca_max).
        type: int
      selectors:
        description: >-
          C(vendors), C(deviceIDs), C(drivers), C(ifNames), C(linkTypes) (lists of strings; elements of one selector
          are ORed, selectors are ANDed). C(linkTypes) values are the plugin's V(infiniband) and V(ether).
        type: dict
        required: true
  resource_name:
    description: C(resourceName) of the generated resource (per rail, C(<resource_name>_<HCA>)).
    type: str
    default: hca_shared_devices_a
  resource_prefix:
    description: C(resourcePrefix) of generated resources.
    type: str
    default: rdma
  rdma_hca_max:
    description: C(rdmaHcaMax) of generated resources.
    type: int
    default: 1000
  per_rail:
    description: Generate one resource per rail (HCA name, with that rail's netdev names) instead of one for all ports.
    type: bool
    default: false
  probe_records:
    description:
      - Result records of the env probe on the nodes (C(aifabric.acceptance.env_probe) over SSH, or
        C(aifabric.acceptance.k8s_workload) O(ignore:kind=env_probe)); only C(rdma.port) records are read. Used to
        generate selectors and to name the cause of a zero allocatable.
    type: list
    elements: dict
    default: []
  node_selector:
    description:
      - C(nodeSelector) of the DaemonSet (a mapping); replaces the node affinity of O(node_label_keys). V({}) selects every
        node.
      - Omitted - the plugin goes to the nodes carrying any of O(node_label_keys).
    type: dict
  node_label_keys:
    description:
      - Label keys (a list), any of which places the plugin - not a C(nodeSelector) mapping (that is O(node_selector)).
      - Without O(node_selector), the DaemonSet gets a required node affinity that accepts a node carrying any of these
        labels with the value V(true) (one C(nodeSelectorTerm) each).
      - The default accepts node-feature-discovery from v0.14 on (C(feature.node.kubernetes.io/rdma.available) - the
        kernel modules C(ib_uverbs) and C(rdma_ucm) are loaded), older NFD (C(custom-rdma.available)) and NFD's PCI
        label of a Mellanox/NVIDIA networking device as network-operator configures it (C(pci-15b3.present)).
      - V([]) selects every node.
    type: list
    elements: str
    default: [feature.node.kubernetes.io/rdma.available, feature.node.kubernetes.io/custom-rdma.available,
              feature.node.kubernetes.io/pci-15b3.present]
  tolerations:
    description:
      - Tolerations of the plugin pods. The default tolerates the GPU operator's C(nvidia.com/gpu) taint of GPU nodes
        (C(NoSchedule)); V([]) for none.
    type: list
    elements: dict
    default: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  priority_class:
    description: C(priorityClassName) of the plugin pods; empty for none.
    type: str
    default: system-node-critical
  max_unavailable:
    description:
      - C(maxUnavailable) of the DaemonSet's rolling update - a count or a percentage - when the config changes.
      - The default rolls a fleet of any size in four waves, well within O(verify_timeout_s); Kubernetes' own
        default, 1, replaces one node's plugin pod at a time, which on hundreds of nodes outlasts the verify, and
        nodes not yet rolled read as stale. A plugin restart does not touch what running pods already hold.
    type: str
    default: 25%
  use_cdi:
    description: Start the plugin with C(--use-cdi) and mount the host's C(/var/run/cdi), where it writes its CDI spec
      (the upstream CDI overlay, C(deployment/k8s/overlay/cdi.yaml)).
    type: bool
    default: false
  adopt:
    description: Take over a ConfigMap/DaemonSet of the same name that another tool created (otherwise the task fails).
    type: bool
    default: false
  hosts:
    description: Node names that must expose the resources (the inventory's hosts); verification judges each of them.
    type: list
    elements: str
    default: []
  verify:
    description: Wait for the plugin on O(hosts) and return the C(k8s.rdma_device_plugin) records.
    type: bool
    default: true
  verify_timeout_s:
    description: Seconds to wait for the DaemonSet to be ready and the resources to appear (then judge what is there).
    type: int
    default: 300
  delete_timeout_s:
    description: Seconds O(state=absent) waits for the objects to be gone.
    type: int
    default: 60
  render_dir:
    description:
      - Render mode - write the ConfigMap and the DaemonSet as YAML files C(<render_dir>/NN-<kind>-<name>.yaml) (mode
        0600, in a directory of this user that nobody else can write) and apply nothing; no cluster is contacted, so
        no check of existing objects and no verification. Needs O(resource_list) or O(probe_records).
      - Only with O(state=present).
    type: path
requirements:
  - kubernetes >= 37 (Python client, on the controller; not needed for O(render_dir))
seealso:
  - module: aifabric.acceptance.k8s_workload
  - module: aifabric.acceptance.env_probe
  - name: k8s-rdma-shared-dev-plugin
    description: The device plugin's configuration format.
    link: https://github.com/Mellanox/k8s-rdma-shared-dev-plugin
"""

EXAMPLES = r"""
- name: Probe the nodes' RDMA ports (the collection's probe code, in a pod per node)
  aifabric.acceptance.k8s_workload:
    kind: env_probe
    hosts: "{{ ansible_play_hosts_all }}"
    image: registry.example.com/acceptance/gpu-tools:2026.11
    env_probe: {groups: [rdma]}
  register: rdma_probe
  delegate_to: localhost
  run_once: true

- name: Deploy the plugin with selectors generated from those ports, one resource per rail, and verify it
  aifabric.acceptance.k8s_device_plugin:
    probe_records: "{{ rdma_probe.results }}"
    per_rail: true
    hosts: "{{ ansible_play_hosts_all }}"
  delegate_to: localhost
  run_once: true

- name: Deploy with explicit selectors (RoCE ports of ConnectX-7)
  aifabric.acceptance.k8s_device_plugin:
    resource_list:
      - name: hca_shared_devices_a
        rdma_hca_max: 63
        selectors: {vendors: ["15b3"], deviceIDs: ["1021"], linkTypes: [ether]}
    hosts: [gpu-node-01, gpu-node-02]
  delegate_to: localhost
  run_once: true

- name: Render the manifests for review (no cluster needed; kubectl apply -f the directory later)
  aifabric.acceptance.k8s_device_plugin:
    resource_list:
      - name: hca_shared_devices_a
        selectors: {vendors: ["15b3"], deviceIDs: ["1021"], linkTypes: [ether]}
    use_cdi: true
    render_dir: /srv/aifabric/rdma-device-plugin
  delegate_to: localhost
  run_once: true

- name: Remove it
  aifabric.acceptance.k8s_device_plugin:
    state: absent
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
results:
  description: One C(k8s.rdma_device_plugin) record per node of O(hosts) and resource (none in check mode or with
    O(verify=false)); C(host) = node, C(target) = the resource, C(metrics.allocatable), C(facts.cause) when the
    allocatable is 0.
  returned: always
  type: list
  elements: dict
  sample:
    - host: gpu-node-03
      check: k8s.rdma_device_plugin
      target: rdma/hca_shared_devices_a
      status: fail
      reason: "rdma/hca_shared_devices_a allocatable is 0: port in the wrong link layer: mlx5_0/1 (eth0 15b3:101b ether)
        is ether, but the selector wants linkTypes ['infiniband']"
actions:
  description: What was (or, in check mode, would be) done to each object.
  returned: always
  type: list
  elements: dict
  sample: [{object: ConfigMap/kube-system/rdma-devices, action: unchanged},
           {object: DaemonSet/kube-system/rdma-shared-dp-ds, action: updated}]
config:
  description: The plugin's C(config.json) as applied (O(state=present)).
  returned: when O(state=present)
  type: dict
resources:
  description: The extended-resource names the plugin publishes (C(rdma/<name>)); request them in pods.
  returned: when O(state=present)
  type: list
  elements: str
files:
  description: The manifest files written by render mode (or that would be, in check mode).
  returned: when O(render_dir) is set
  type: list
  elements: path
"""


from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, modmain
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_device_plugin as dp


def argument_spec():
    spec = dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        namespace=dict(type="str", default=dp.NAMESPACE),
        name=dict(type="str", default=dp.NAME),
        config_map=dict(type="str", default=dp.CONFIG_MAP),
        image=dict(type="str", default=dp.IMAGE),
        tag=dict(type="str", default=dp.TAG),
        image_pull_policy=dict(type="str", choices=["Always", "IfNotPresent", "Never"], default="IfNotPresent"),
        image_pull_secrets=dict(type="list", elements="str", default=[], no_log=False),
        periodic_update_interval_s=dict(type="int", default=60),
        resource_list=dict(type="list", elements="dict", default=[], options=dict(
            name=dict(type="str", required=True),
            prefix=dict(type="str"),
            rdma_hca_max=dict(type="int"),
            selectors=dict(type="dict", required=True),
        )),
        resource_name=dict(type="str", default=dp.RESOURCE_NAME),
        resource_prefix=dict(type="str", default=dp.RESOURCE_PREFIX),
        rdma_hca_max=dict(type="int", default=dp.HCA_MAX),
        per_rail=dict(type="bool", default=False),
        probe_records=dict(type="list", elements="dict", default=[]),
        node_selector=dict(type="dict"),
        node_label_keys=dict(type="list", elements="str", default=list(dp.RDMA_NODE_LABELS), no_log=False),
        tolerations=dict(type="list", elements="dict", default=[dict(t) for t in dp.GPU_TOLERATIONS]),
        priority_class=dict(type="str", default="system-node-critical"),
        max_unavailable=dict(type="str", default="25%"),
        use_cdi=dict(type="bool", default=False),
        adopt=dict(type="bool", default=False),
        hosts=dict(type="list", elements="str", default=[]),
        verify=dict(type="bool", default=True),
        verify_timeout_s=dict(type="int", default=300),
        delete_timeout_s=dict(type="int", default=60),
        render_dir=dict(type="path"),
    )
    spec.update(k8s_api.connection_argspec())
    return spec


def build(p):
    """(config, objects) for the module's parameters (pure; raises PluginError on bad input)."""
    if p["periodic_update_interval_s"] < 0:
        raise dp.PluginError("periodic_update_interval_s must be >= 0, got %d" % p["periodic_update_interval_s"])
    if p["rdma_hca_max"] < 1:
        raise dp.PluginError("rdma_hca_max must be >= 1, got %d" % p["rdma_hca_max"])
    if p["resource_list"]:
        config_list = dp.normalize_resources(p["resource_list"], p["resource_prefix"], p["rdma_hca_max"])
    else:
        config_list = dp.generate_config_list(dp.devices_from_records(p["probe_records"]), p["resource_name"],
                                              p["resource_prefix"], p["rdma_hca_max"], p["per_rail"])
    cfg = dp.config(config_list, p["periodic_update_interval_s"])
    objects = dp.manifests(cfg, namespace=p["namespace"], name=p["name"], config_map=p["config_map"],
                           image=p["image"], tag=p["tag"], image_pull_policy=p["image_pull_policy"],
                           node_selector=p["node_selector"], tolerations=p["tolerations"],
                           priority_class=p["priority_class"], use_cdi=p["use_cdi"],
                           image_pull_secrets=p["image_pull_secrets"], node_label_keys=p["node_label_keys"],
                           max_unavailable=p["max_unavailable"])
    return cfg, objects


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    modmain.run(module, "k8s_device_plugin", _state, fields={"results": []})


def _state(module):
    p = module.params
    if p["render_dir"]:
        return _render(module, p)
    api = k8s_api.connect(p)
    if p["state"] == "absent":
        actions = dp.remove(api, dp.desired_for_removal(p["namespace"], p["name"], p["config_map"]),
                            check_mode=module.check_mode, timeout_s=p["delete_timeout_s"])
        changed = any(a["action"] == "deleted" for a in actions)
        left = [a["object"] for a in actions if a["action"].startswith("still present")]
        if left:
            module.fail_json(msg="still present after %d s: %s" % (p["delete_timeout_s"], ", ".join(left)),
                             actions=actions, results=[])
        return dict(changed=changed, actions=actions, results=[])
    cfg, objects = build(p)
    actions = dp.apply(api, objects, check_mode=module.check_mode, adopt=p["adopt"])
    changed = any(a["action"] != "unchanged" for a in actions)
    names = dp.resource_names(cfg)
    records = []
    if p["verify"] and p["hosts"] and not module.check_mode:
        selectors = dict((n, e.get("selectors") or {}) for n, e in zip(names, cfg["configList"]))
        records = dp.verify(api, p["namespace"], p["name"], p["hosts"], names,
                            devices=dp.devices_from_records(p["probe_records"]), timeout_s=p["verify_timeout_s"],
                            selectors=selectors, expected=dp.expected_counts(cfg))
    return dict(changed=changed, actions=actions, config=cfg, resources=names, results=records)


def _render(module, p):
    """Render mode: the manifests as files, nothing sent to a cluster."""
    if p["state"] != "present":
        module.fail_json(msg="render_dir renders the manifests of state=present; state=absent needs a cluster",
                         results=[])
    cfg, objects = build(p)
    files = dp.render(objects, p["render_dir"], write=not module.check_mode)
    # the fleet report's "measures nothing by design" (fleet_report's aifabric_report_skip): a run that only
    # rendered gets no report in which every node is an error
    return dict(changed=not module.check_mode, files=files, config=cfg, resources=dp.resource_names(cfg),
                actions=[{"object": ref, "action": "rendered"} for ref in dp.objects_ref(objects)], results=[],
                aifabric_report_skip="render only (render_dir=%s): manifests written, no measurements"
                % p["render_dir"])


if __name__ == "__main__":
    main()
