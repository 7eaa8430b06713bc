/* The shared library's own translation unit; every exported symbol comes from collcomm_static
 * (linked whole) and the version script keeps only cc*. */
