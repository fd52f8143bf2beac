# shellcheck shell=bash
# Shared by tools/quickstart.sh, tools/run-tests.sh and the benchmarks' scripts: installs what
# granflow needs on Debian, configures the environment Open MPI wants when run as root on a small
# machine, and chooses mpirun's options for the machine.

GF_PACKAGES="build-essential cmake libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools libcmocka-dev zlib1g-dev libccd-dev"
# The test suite also fuzzes the configuration parser with clang's libFuzzer, tests the Python
# reader (tools/python) and the XDMF file with h5py and numpy, the figures with matplotlib, and
# builds a program against the installed library with pkg-config.
GF_TEST_PACKAGES="clang libclang-rt-14-dev python3-h5py python3-numpy python3-matplotlib pkg-config"
# The figures: matplotlib, from the Python package (python3 -m granflow.figures).
GF_FIGURE_PACKAGES="python3-numpy python3-h5py python3-matplotlib"
# ParaView opens the output in the suite (test_paraview), rendering under a virtual X server; the
# test is skipped, and says so, where these cannot be installed.
GF_PARAVIEW_PACKAGES="paraview xvfb"

# The packages named that are not installed, one per line.
gf_missing_packages() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}

# Installs the packages named (default: GF_PACKAGES) that are missing.
gf_install_deps() {
    local missing
    mapfile -t missing < <(gf_missing_packages ${@:-$GF_PACKAGES})
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing missing packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq "${missing[@]}"
    else
        echo "granflow needs these Debian packages: ${missing[*]}" >&2
        echo "Install them with:" >&2
        echo "    sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
}

# Installs the packages named if it can; says what is missing and goes on if it cannot.
gf_install_optional() {
    local missing
    mapfile -t missing < <(gf_missing_packages "$@")
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing optional packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        if apt-get install -y -qq "${missing[@]}" ||
            { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; }; then
            return 0
        fi
    fi
    echo "NOTE: could not install ${missing[*]}: the tests that need them will be skipped" >&2
}

# Draws a tool's figure: python3 -m granflow.figures ARGS with this tree's package, with Debian's
# python3 (which has the packages above) where there is one.
gf_figures() {
    local py=python3
    [ -x /usr/bin/python3 ] && py=/usr/bin/python3
    if ! "$py" -c "import matplotlib, h5py" 2> /dev/null; then
        echo "no figure drawn ($*): $py lacks matplotlib or h5py (Debian: $GF_FIGURE_PACKAGES)"
        return 0
    fi
    PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}" \
        "$py" -m granflow.figures "$@"
}

gf_mpi_env() {
    # Open MPI refuses root unless told twice, and must be allowed more ranks than cores.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
}

gf_jobs() {
    nproc 2>/dev/null || echo 2
}

# The cores this process may run on (its affinity mask, as nproc counts them).
gf_cores() {
    nproc 2>/dev/null || echo 1
}

# Prints mpirun's options for RANKS ranks on CORES cores (default: gf_cores). With more ranks
# than cores, or on 2 cores or fewer (where the machine's other processes compete with the
# ranks), Open MPI's default busy polling makes a waiting rank take the core from the rank it
# waits for, and its default binding (to a core, for up to 2 ranks) pins every job's rank 0 to
# the same core: 2 ranks then run slower than 1. So: no binding, and yield when idle. Otherwise
# Open MPI's defaults (nothing printed). GF_MPIRUN_OPTIONS, when set, is printed instead.
gf_mpirun_options() {
    local ranks=${1:?gf_mpirun_options RANKS [CORES]} cores=${2:-$(gf_cores)}
    if [ -n "${GF_MPIRUN_OPTIONS+set}" ]; then
        echo "$GF_MPIRUN_OPTIONS"
    elif [ "$cores" -le 2 ] || [ "$cores" -lt "$ranks" ]; then
        echo "--oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
    else
        echo ""
    fi
}
