# Sourced by the GPU checks of the ncu backend (gpu-check-ncu.sh, speed-of-light.sh): puts
# /usr/local/cuda/bin last on PATH (kprof's own search of ncu: KPROF_NCU if set, else PATH, else
# /usr/local/cuda/bin) and prints ncu's version.
export PATH="$PATH:/usr/local/cuda/bin"
ncu --version 2>&1 | tail -1
