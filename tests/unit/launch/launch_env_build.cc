// Compiles the launch library (tools/launch/*.cc) into collcomm_launch_tests. The test executables
// link collcomm_static rather than libcollcomm.so, so the collcomm_launch target (which links the
// shared library) cannot be linked here without two copies of the library in one process.
#include "../../../tools/launch/launch_comm.cc"
#include "../../../tools/launch/launch_env.cc"
