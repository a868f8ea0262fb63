# The quick selection of the test suite, sourced by tools/aarch64.sh --quick and
# tools/wheel.sh --quick (what CI runs there; the README's test command runs everything on
# the host first): the suite but the files whose code is Python over pyarrow, Dask or
# PyIceberg (the commands, the writers, the clusters), or reads the source tree. Those are
# the same code on every platform and in every build, and their time goes to starting
# processes, clusters and catalogs. Nor test_leaks.py: the allocations it watches are the
# driver's and the value code's, the same C in every build (no backend allocates), and
# under qemu-user a window's memory includes the emulator's own (there, the leak checker's
# own test once found a leak's window flat). The kernels, ordered bytes, values, Hilbert,
# rank, CPU and install tests all stay. Paths are relative to the directory that holds tests/.
# shellcheck disable=SC2034  # (used by the scripts that source this file)
QUICK_TESTS=(tests --ignore=tests/test_dask.py --ignore=tests/test_dask_spill.py
             --ignore-glob='tests/test_iceberg*.py' --ignore=tests/test_profile.py
             --ignore=tests/test_cluster_in_process.py --ignore=tests/test_curves.py
             --ignore=tests/test_parallel_writer.py --ignore=tests/test_encoded_size.py
             --ignore=tests/test_hardening.py --ignore=tests/test_cluster_scale.py
             --ignore=tests/test_out_of_core.py --ignore=tests/test_parquet_cli.py
             --ignore=tests/test_cli_safety.py --ignore=tests/test_datasets.py
             --ignore=tests/test_safety.py --ignore=tests/test_typing.py
             --ignore=tests/test_xdist_groups.py --ignore=tests/test_docs.py
             --ignore=tests/test_history.py --ignore=tests/test_layout.py
             --ignore=tests/test_packaging.py --ignore=tests/test_leaks.py)
