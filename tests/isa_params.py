"""Every ISA variant of the dispatch table as a pytest parameter; a variant this CPU cannot
run is skipped with the flags it lacks ("no avx512_vnni on this CPU")."""

import pytest

from perfsuite import kernels


def isa_params(names=kernels.KNOWN_ISAS):
    params = []
    for name in names:
        missing = kernels.missing_flags(name)
        reason = f"no {' '.join(missing)} on this CPU"
        params.append(
            pytest.param(name, id=name, marks=pytest.mark.skipif(bool(missing), reason=reason))
        )
    return params
