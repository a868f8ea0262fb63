"""The CPU facts the backend selector needs, read with CPUID in a few microseconds.

py-cpuinfo's get_cpu_info() would give the same facts but starts a Python child process
(0.2 s to seconds, and known to hang in some containers), too slow for `import zorder`.
The dict has py-cpuinfo's keys and flag spellings, so choose_backend() takes either.
"""

import platform

from zorder.cpu import features
from zorder.cpu.platform_facts import arch_name, facts_without_cpuid, read_proc_cpuinfo

from libc.stdint cimport uint32_t

from zorder.cpu.cpuid cimport ZORDER_X86_64, cpuid, os_xcr0

# The CPUID leaves read (subleaf 0): the feature table's, and 1 for family and model.
_LEAVES = tuple(sorted({1} | {f.leaf for f in features.FEATURES}))

def cpu_facts():
    """py-cpuinfo-shaped facts about this CPU: arch, vendor_id_raw, family, model, flags.

    ``flags`` lists what CPUID reports; ``os_avx`` and ``os_avx512`` say whether the OS
    saves the YMM / ZMM registers (XGETBV), which py-cpuinfo does not report.
    ``usable`` holds the backends' checks (``features.USABLE_FEATURES``), derived from the
    feature table as everything here is.
    Every platform gets the same keys (``platform_facts.FACT_KEYS``); without CPUID they
    come from /proc/cpuinfo and ``platform``.
    """
    cdef uint32_t regs[4]
    cdef uint32_t max_leaf, eax
    cdef int family, model
    if not ZORDER_X86_64:
        return facts_without_cpuid(platform.machine(), read_proc_cpuinfo())
    facts = {
        "arch": arch_name(platform.machine()),
        "source": "cpuid",
        "flags": [],
        # Set from leaf 1 below; None only on a CPU too old to have it.
        "family": None,
        "model": None,
        "stepping": None,
    }
    cpuid(0, 0, regs)
    max_leaf = regs[0]
    vendor = b"".join(regs[i].to_bytes(4, "little") for i in (1, 3, 2))
    facts["vendor_id_raw"] = vendor.decode("ascii", "replace")
    leaves = {}
    for leaf in _LEAVES:
        if max_leaf >= leaf:
            cpuid(leaf, 0, regs)
            leaves[leaf] = (regs[0], regs[1], regs[2], regs[3])
    if 1 in leaves:
        eax = leaves[1][0]
        family = (eax >> 8) & 0xF
        model = (eax >> 4) & 0xF
        if family == 0xF:
            family += (eax >> 20) & 0xFF
        if family == 0x6 or family >= 0xF:
            model += ((eax >> 16) & 0xF) << 4
        facts["family"] = family
        facts["model"] = model
        facts["stepping"] = eax & 0xF
    facts["flags"] = features.decode(leaves)
    facts.update(features.os_facts(os_xcr0()))
    facts["brand_raw"] = _brand_string(max_ext=_max_extended_leaf())
    facts["usable"] = {name: features.supported(name, facts)
                       for name in features.USABLE_FEATURES}
    return facts


cdef uint32_t _max_extended_leaf():
    cdef uint32_t regs[4]
    cpuid(0x80000000, 0, regs)
    return regs[0]


cdef str _brand_string(uint32_t max_ext):
    cdef uint32_t regs[4]
    if max_ext < 0x80000004:
        return ""
    parts = []
    for leaf in (0x80000002, 0x80000003, 0x80000004):
        cpuid(leaf, 0, regs)
        parts.append(b"".join(regs[i].to_bytes(4, "little") for i in range(4)))
    return b"".join(parts).split(b"\0", 1)[0].decode("ascii", "replace").strip()
