#!/usr/bin/env python3
"""Writes the CPU sysfs fixture trees of platform/testdata/sysfs/ (README.md says where each
value comes from). Run from anywhere; it rewrites every tree beside this file."""
import os
import pathlib
import shutil

HERE = pathlib.Path(__file__).resolve().parent

# MIDR_EL1 values: implementer, variant, architecture 0xf, part, revision.
A55 = 0x412FD050
A76 = 0x414FD0B0
A76_PI5 = 0x414FD0B1
A510 = 0x411FD461
A710 = 0x412FD470
A715 = 0x411FD4D0
X3 = 0x411FD4E0
A77 = 0x411FD0D0
KRYO_SILVER = 0x517F805E


def cpu(capacity=None, policy=None, cluster_id=None, package_id=0, midr=None, core_cpus=None):
    return dict(capacity=capacity, policy=policy, cluster_id=cluster_id, package_id=package_id,
                midr=midr, core_cpus=core_cpus)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def cpu_list(cpus):
    parts, i = [], 0
    cpus = sorted(cpus)
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def tree(name, cpus, policies=None, online=None, present=None):
    """cpus: {id: cpu(...)}; policies: {policy id: max kHz}; online/present: id lists."""
    root = HERE / name
    shutil.rmtree(root, ignore_errors=True)
    ids = sorted(cpus)
    online = ids if online is None else online
    present = ids if present is None else present
    write(root / "online", cpu_list(online))
    write(root / "present", cpu_list(present))
    write(root / "possible", cpu_list(present))
    for policy, max_khz in (policies or {}).items():
        members = [c for c in ids if cpus[c]["policy"] == policy and c in online]
        pdir = root / "cpufreq" / f"policy{policy}"
        write(pdir / "cpuinfo_max_freq", str(max_khz))
        write(pdir / "related_cpus", " ".join(str(c) for c in members))
    for c in ids:
        d, info = root / f"cpu{c}", cpus[c]
        d.mkdir(parents=True)
        if c in online and c != 0:
            write(d / "online", "1")
        elif c not in online:
            write(d / "online", "0")
            continue  # an offline core has no topology, capacity or cpufreq files
        if info["capacity"] is not None:
            write(d / "cpu_capacity", str(info["capacity"]))
        if info["policy"] is not None and policies is not None:
            os.symlink(f"../cpufreq/policy{info['policy']}", d / "cpufreq")
        topo = d / "topology"
        if info["cluster_id"] is not None:
            write(topo / "cluster_id", str(info["cluster_id"]))
        write(topo / "physical_package_id", str(info["package_id"]))
        write(topo / "core_cpus_list", cpu_list(info["core_cpus"] or [c]))
        write(topo / "thread_siblings_list", cpu_list(info["core_cpus"] or [c]))
        if info["midr"] is not None:
            write(d / "regs" / "identification" / "midr_el1", f"0x{info['midr']:016x}")
    return root


def rk3588_linux61():
    cpus = {c: cpu(422, 0, 0, 0, A55) for c in range(4)}
    cpus.update({c: cpu(1024, 4, 1, 0, A76) for c in (4, 5)})
    cpus.update({c: cpu(1024, 6, 2, 0, A76) for c in (6, 7)})
    return cpus, {0: 1800000, 4: 2256000, 6: 2256000}


def main():
    cpus, policies = rk3588_linux61()
    tree("rk3588-linux6.1", cpus, policies)

    bsp = {c: cpu(397, 0, None, 0, A55) for c in range(4)}
    bsp.update({c: cpu(1024, 4, None, 1, A76) for c in (4, 5)})
    bsp.update({c: cpu(1024, 6, None, 2, A76) for c in (6, 7)})
    tree("rk3588-bsp5.10", bsp, {0: 1800000, 4: 2400000, 6: 2400000})

    sd8g2 = {c: cpu(350, 0, 0, 0, A510) for c in range(3)}
    sd8g2.update({c: cpu(852, 3, 0, 0, A715) for c in (3, 4)})
    sd8g2.update({c: cpu(852, 3, 0, 0, A710) for c in (5, 6)})
    sd8g2[7] = cpu(1024, 7, 0, 0, X3)
    tree("snapdragon-8gen2", sd8g2, {0: 2016000, 3: 2803200, 7: 3187200})

    sd865 = {c: cpu(284, 0, 0, 0, KRYO_SILVER) for c in range(4)}
    sd865.update({c: cpu(871, 4, 0, 0, A77) for c in (4, 5, 6)})
    sd865[7] = cpu(1024, 7, 0, 0, A77)
    tree("snapdragon-865", sd865, {0: 1804800, 4: 2419200, 7: 2841600})

    tree("raspberry-pi-5", {c: cpu(1024, 0, 0, 0, A76_PI5) for c in range(4)}, {0: 2400000})

    tree("x86-vm-2vcpu", {c: cpu(None, None, 65535, 0, None) for c in range(2)})

    smt = {c: cpu(None, None, 65535, 0, None, core_cpus=[c % 2, c % 2 + 2]) for c in range(4)}
    tree("x86-smt-2core", smt)

    two = {0: cpu(512, 0, 0, 0, None), 1: cpu(1024, 1, 1, 0, None)}
    tree("two-core-big-little", two, {0: 1200000, 1: 2400000})

    # Damaged trees, all from the mainline RK3588 one.
    cpus, policies = rk3588_linux61()
    tree("damaged-no-cpufreq", cpus, None)

    cpus, policies = rk3588_linux61()
    tree("damaged-offline", cpus, policies, online=list(range(6)))

    cpus, policies = rk3588_linux61()
    root = tree("damaged-unreadable", cpus, policies)
    (root / "cpu5" / "cpu_capacity").unlink()
    write(root / "cpu5" / "cpu_capacity" / "README", "a directory where the file should be")
    policy0 = root / "cpufreq" / "policy0" / "cpuinfo_max_freq"
    write(policy0, "<unknown>")

    cpus, policies = rk3588_linux61()
    cpus.update({c: cpu(1004, 4, 1, 0, A76) for c in (4, 5)})
    root = tree("damaged-asymmetric", cpus, {0: 1800000, 4: 2208000, 6: 2256000})
    write(root / "cpu0" / "regs" / "identification" / "midr_el1", "zz")

    cpus, policies = rk3588_linux61()
    root = tree("damaged-online-list", cpus, policies)
    write(root / "online", "0-3,banana")

    cpus, policies = rk3588_linux61()
    root = tree("damaged-no-online", cpus, policies)
    (root / "online").unlink()


if __name__ == "__main__":
    main()
