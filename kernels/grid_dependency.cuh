// Programmatic dependent launch (sm_90): the two device-side halves of a launch with
// cudaLaunchAttributeProgrammaticStreamSerialization. Where no such launch was made, or in code for an older
// architecture, both are no-ops.
#ifndef KM_KERNELS_GRID_DEPENDENCY_CUH
#define KM_KERNELS_GRID_DEPENDENCY_CUH

// This CTA no longer holds back the next grid in the stream: once every CTA of this grid has said so (or
// exited), the next grid's CTAs may start on whatever the SMs have free.
__device__ __forceinline__ void grid_launch_next() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Wait until the grids this one depends on have completed and their writes are visible.
__device__ __forceinline__ void grid_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

#endif
