# Link dependencies of src/topo: hwloc (CPUs, NUMA, PCI tree) and libxml2 (topology files).
# NVML and libibverbs are loaded at run time with dlopen and need nothing here.
find_package(PkgConfig REQUIRED)
pkg_check_modules(COLLCOMM_HWLOC REQUIRED IMPORTED_TARGET hwloc)
find_package(LibXml2 REQUIRED)
target_link_libraries(collcomm_static PUBLIC PkgConfig::COLLCOMM_HWLOC LibXml2::LibXml2)
