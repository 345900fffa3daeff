"""The Kubernetes deployment against the program: deploy/kubernetes/daemonset.yaml
and the Containerfile are checked statically (no cluster, and podman cannot
build images here), against the C sources, `pybpfprof agent --help` and
Debian 12's package lists.

- the DaemonSet runs with the host's PID namespace, not privileged, with
  exactly the capabilities the agent needs, every hostPath read-only;
- every host path it mounts is one the code opens (the runtimes' state
  directories of user/proc/bundle.c's table, BTF), under the root
  PYBPFPROF_HOST_ROOT names, and every runtime directory of the table is
  mounted;
- the command and environment name only what `pybpfprof agent --help` lists
  (skipped, loudly, while the binary has no agent subcommand);
- the image's runtime packages exist in Debian 12 and bring every shared
  library build/pybpfprof links."""

import glob
import os
import re
import shlex
import subprocess

import pytest
import yaml

from conftest import PYBPFPROF, REPO

DAEMONSET = os.path.join(REPO, "deploy", "kubernetes", "daemonset.yaml")
CONTAINERFILE = os.path.join(REPO, "Containerfile")
BUNDLE_C = os.path.join(REPO, "user", "proc", "bundle.c")

CAPS = {"BPF", "PERFMON", "SYS_PTRACE", "SYS_RESOURCE"}
LONGOPT = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
ENVNAME = re.compile(r"\bPYBPFPROF_[A-Z0-9_]+\b")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def docs():
    return {d["kind"]: d for d in yaml.safe_load_all(read(DAEMONSET)) if d}


@pytest.fixture(scope="module")
def pod(docs):
    return docs["DaemonSet"]["spec"]["template"]["spec"]


@pytest.fixture(scope="module")
def agent(pod):
    (c,) = [c for c in pod["containers"] if c["name"] == "agent"]
    return c


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def host_mounts(pod, container):
    """[(host path, mount path, readOnly)] of the container's hostPath volumes."""
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    out = []
    for m in container.get("volumeMounts", []):
        v = vols[m["name"]]
        assert "hostPath" in v, "volume %s is not a hostPath: only host paths are expected" % m["name"]
        out.append((v["hostPath"]["path"], m["mountPath"], m.get("readOnly", False)))
    return out


def layout_dirs():
    """The runtimes' directories of bundle.c's layout table, relative to the root."""
    m = re.search(r"\blayouts\[\]\s*=\s*\{(.*?)\n\};", read(BUNDLE_C), re.S)
    assert m, "no layouts[] table in user/proc/bundle.c"
    dirs = re.findall(r'\{\s*"[^"]+",\s*"(run/[^"]+)"', m.group(1))
    assert len(dirs) >= 2, dirs
    return dirs


def c_sources_text():
    return "".join(read(p) for p in glob.glob(os.path.join(REPO, "user", "*", "*.[ch]")))


def under(path, parent):
    return path == parent or path.startswith(parent.rstrip("/") + "/")


# --- security -----------------------------------------------------------------------

def test_network_policy_admits_one_namespace(docs, pod):
    """The agent's port is reachable from one namespace only (issue 31): a
    profile names every Python process's functions, files and pods."""
    np = docs["NetworkPolicy"]["spec"]
    labels = docs["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
    assert np["policyTypes"] == ["Ingress"]
    assert all(labels.get(k) == v for k, v in np["podSelector"]["matchLabels"].items())
    (rule,) = np["ingress"]
    assert [list(f) for f in rule["from"]] == [["namespaceSelector"]], rule["from"]
    assert list(rule["from"][0]["namespaceSelector"]["matchLabels"]) == ["kubernetes.io/metadata.name"]
    ports = {p["name"] for c in pod["containers"] for p in c.get("ports", [])}
    assert [p["port"] for p in rule["ports"]] == ["http-metrics"] and "http-metrics" in ports
    assert pod["terminationGracePeriodSeconds"] > 5, "the agent takes up to 5 s to push its last window"


def test_host_pid_not_privileged(pod, agent):
    assert pod.get("hostPID") is True
    assert not pod.get("hostNetwork"), "the agent listens on the pod IP, not the node's"
    sc = agent["securityContext"]
    assert sc.get("privileged") is False
    assert sc.get("allowPrivilegeEscalation") is False
    assert sc.get("readOnlyRootFilesystem") is True
    assert sc["seccompProfile"]["type"] in ("RuntimeDefault", "Unconfined")


def test_capabilities_exactly(agent):
    caps = agent["securityContext"]["capabilities"]
    assert caps["drop"] == ["ALL"]
    assert set(caps["add"]) == CAPS and len(caps["add"]) == len(CAPS)
    assert "SYS_ADMIN" not in caps["add"]


def test_no_api_access(docs, pod):
    sa = docs["ServiceAccount"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    assert pod.get("automountServiceAccountToken") is False
    assert set(docs) == {"ServiceAccount", "DaemonSet", "NetworkPolicy"}, \
        "no Role or binding: the agent needs no API access"
    for d in docs.values():
        assert "namespace" not in d["metadata"], "namespace-agnostic: kubectl apply -n NS"


def test_resources_port_probe(docs, agent):
    assert agent["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"},
                                  "limits": {"cpu": "500m", "memory": "300Mi"}}
    # docs/agent.md's sizing: 48 MB + 64 KB a process (500 here) + --max-memory, a quarter more
    history = int(env_of(agent)["PYBPFPROF_MAX_MEMORY"]["value"])
    assert (48 + 500 * 64 / 1024 + history) * 1.25 <= 300, history
    (port,) = agent["ports"]
    assert port == {"name": "http-metrics", "containerPort": 4100, "protocol": "TCP"}
    probe = agent["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz" and probe["port"] in ("http-metrics", 4100)
    ann = docs["DaemonSet"]["spec"]["template"]["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true" and ann["prometheus.io/port"] == "4100"
    assert env_of(agent)["PYBPFPROF_LISTEN"]["value"].endswith(":4100")


# --- mounts against the code ---------------------------------------------------------

def test_every_host_mount_read_only(pod, agent):
    mounts = host_mounts(pod, agent)
    assert mounts
    for host, path, ro in mounts:
        assert ro is True, "%s is mounted writable" % host
    assert not any(under(h, "/sys/kernel/debug") for h, _, _ in mounts), "debugfs is not needed"


def test_mounts_are_what_the_code_opens(pod, agent):
    """Each host path is one the C sources name (a runtime directory of the
    bundle table below the host root, or a /sys path), and every runtime
    directory of the table is reachable through a mount at the same place
    below PYBPFPROF_HOST_ROOT."""
    env = env_of(agent)
    root = env["PYBPFPROF_HOST_ROOT"]["value"]
    assert root.startswith("/") and root != "/"
    dirs = layout_dirs()
    src = c_sources_text()
    for host, path, _ in host_mounts(pod, agent):
        if under(path, root):
            # mounted at the same place below the root as on the host
            assert path == root.rstrip("/") + host, (host, path)
            assert any(under("/" + d, host) for d in dirs), \
                "%s is mounted but bundle.c's table reads nothing below it" % host
        else:
            # a /sys path, at its own place, that the code opens
            assert path == host and host.startswith("/sys/"), (host, path)
            assert re.search(r'"%s(/[^"]*)?"' % re.escape(host), src), \
                "%s is mounted but no C source opens it" % host
    for d in dirs:
        assert any(under("/" + d, host) and path == root.rstrip("/") + host
                   for host, path, _ in host_mounts(pod, agent)), \
            "bundle.c reads /%s but the DaemonSet does not mount it below %s" % (d, root)


def test_host_root_is_the_codes(agent):
    """The code's layouts are relative to the root the agent is given: the
    table's paths must not be absolute, or PYBPFPROF_HOST_ROOT would be ignored."""
    for d in layout_dirs():
        assert not d.startswith("/"), d
    assert env_of(agent)["PYBPFPROF_HOST_ROOT"]["value"] == "/host"


def test_node_name_from_downward_api(agent):
    env = env_of(agent)
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env["PYBPFPROF_NODE"]["value"] == "$(NODE_NAME)"
    names = [e["name"] for e in agent["env"]]
    assert names.index("NODE_NAME") < names.index("PYBPFPROF_NODE"), \
        "$(NODE_NAME) expands only from a variable defined before it"


# --- the command line against the program ------------------------------------------------

@pytest.fixture(scope="module")
def agent_help():
    if not os.access(PYBPFPROF, os.X_OK):
        pytest.fail("build/pybpfprof is not built (make all)", pytrace=False)
    r = subprocess.run([PYBPFPROF, "agent", "--help"], capture_output=True,
                       universal_newlines=True, timeout=30)
    if r.returncode != 0 or "agent" not in r.stdout:
        pytest.skip("SKIPPED LOUDLY: %s has no `agent` subcommand yet (%s): the DaemonSet's "
                    "command and environment are NOT checked against its --help"
                    % (PYBPFPROF, (r.stderr or r.stdout).strip().splitlines()[-1:]))
    return r.stdout


def test_command_matches_image(agent):
    entry = re.search(r"(?m)^ENTRYPOINT\s+(\[.*\])\s*$", read(CONTAINERFILE))
    assert entry, "no ENTRYPOINT in exec form in the Containerfile"
    assert yaml.safe_load(entry.group(1)) == ["pybpfprof", "agent"]
    assert agent.get("command", ["pybpfprof", "agent"]) == ["pybpfprof", "agent"]


def test_command_and_env_are_in_agent_help(agent, agent_help):
    opts = set(LONGOPT.findall(agent_help))
    for a in agent.get("command", [])[2:] + agent.get("args", []):
        for o in LONGOPT.findall(a):
            assert o in opts, "--%s is not in `pybpfprof agent --help`" % o
    # every PYBPFPROF_ name of the file, the commented examples included
    # (the agent reads PYBPFPROF_<LONG OPTION, - as _> for every option)
    for name in sorted(set(ENVNAME.findall(read(DAEMONSET)))):
        opt = name[len("PYBPFPROF_"):].lower().replace("_", "-")
        assert opt in opts, "%s names no option of `pybpfprof agent --help`" % name


# --- the image -------------------------------------------------------------------------

def runtime_packages():
    """The packages the Containerfile's last stage installs."""
    text = read(CONTAINERFILE).replace("\\\n", " ")
    stages = re.split(r"(?m)^FROM\s", text)
    assert len(stages) >= 3, "a build stage and a runtime stage"
    assert re.match(r"debian:12-slim\b", stages[-1]) and re.match(r"debian:12-slim AS build", stages[1])
    (install,) = re.findall(r"apt-get install ([^&\n]*)", stages[-1])
    return [w for w in shlex.split(install) if not w.startswith("-")]


def test_runtime_packages_exist_in_debian_12():
    pkgs = runtime_packages()
    assert {"libbpf1", "libelf1", "zlib1g", "libprotobuf-c1", "libmicrohttpd12",
            "libcurl4", "libcjson1"} <= set(pkgs)
    with open("/etc/os-release", encoding="utf-8") as f:
        if 'VERSION_CODENAME=bookworm' not in f.read():
            pytest.skip("not Debian 12: apt-cache here does not answer for Debian 12")
    r = subprocess.run(["apt-cache", "show", "--no-all-versions"] + pkgs, capture_output=True,
                       universal_newlines=True, timeout=60)
    for p in pkgs:
        assert "Package: %s\n" % p in r.stdout, "%s is not a Debian 12 package" % p


def dependency_closure(pkgs):
    """The packages and what apt installs with them (Depends and PreDepends, recursively)."""
    r = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                        "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + pkgs,
                       capture_output=True, universal_newlines=True, timeout=120)
    assert r.returncode == 0, r.stderr
    names = set(re.findall(r"(?m)^([a-z0-9][a-z0-9.+-]*)$", r.stdout))
    names |= set(re.findall(r"(?m)^\s+(?:Pre)?Depends: <?([a-z0-9][a-z0-9.+-]*)", r.stdout))
    return {n.split(":")[0] for n in names} | set(pkgs)


def test_runtime_packages_bring_every_library_linked():
    """Each shared library build/pybpfprof needs comes from a runtime package (or libc6)."""
    if not os.access(PYBPFPROF, os.X_OK):
        pytest.fail("build/pybpfprof is not built (make all)", pytrace=False)
    pkgs = dependency_closure(runtime_packages() + ["libc6"])
    r = subprocess.run(["ldd", PYBPFPROF], capture_output=True, universal_newlines=True, timeout=30)
    assert r.returncode == 0, r.stderr
    libs = re.findall(r"=>\s*(/\S+)", r.stdout)
    assert libs
    # One dpkg -S for every candidate path (a library may be registered under /usr or not).
    cands = {lib: [lib, os.path.realpath(lib), "/usr" + lib, "/usr" + os.path.realpath(lib)] for lib in libs}
    q = subprocess.run(["dpkg", "-S"] + sorted({c for cs in cands.values() for c in cs}),
                       capture_output=True, universal_newlines=True, timeout=60)
    owner_of = {}
    for line in q.stdout.splitlines():
        pkg, _, path = line.partition(": ")
        owner_of[path.strip()] = pkg.split(":")[0]
    for lib, paths in cands.items():
        owner = next((owner_of[c] for c in paths if c in owner_of), None)
        assert owner, "no package owns %s" % lib
        assert owner in pkgs, "%s comes from %s, which the Containerfile's runtime stage lacks" % (lib, owner)


def test_build_stage_has_make_deps_build_packages():
    """The build stage installs the build half of scripts/deps.sh's list."""
    text = read(CONTAINERFILE).replace("\\\n", " ")
    build = re.split(r"(?m)^FROM\s", text)[1]
    (install,) = re.findall(r"apt-get install ([^&\n]*)", build)
    have = set(shlex.split(install))
    m = re.search(r'PKGS="([^"]*)"', read(os.path.join(REPO, "scripts", "deps.sh")))
    deps = set(m.group(1).replace("\\", " ").split())
    # -dev packages for the tests and benches only: sanitizer runtimes, Python headers for
    # test_native's extension, libunwind for natbench's comparison
    test_only = ("libclang-rt-14-dev", "python3-dev", "libunwind-dev")
    need = {p for p in deps if p.endswith("-dev") and p not in test_only}
    need |= {"clang", "llvm", "bpftool", "make", "gcc", "pkg-config", "xxd", "protobuf-c-compiler"}
    assert sorted(need - have) == []
    assert "make" in build and re.search(r"\bmake\b[^\n]*\ball\b", build)
