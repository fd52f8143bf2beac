/* Command-line options of the tools: numbers checked, so a typo is an error and not a zero. A
 * NULL tool name reads quietly (the ranks of an MPI job but one). */
#ifndef GF_TOOLS_CLI_H
#define GF_TOOLS_CLI_H

/* Reads the n numbers after option argv[*i] into out and advances *i past them. On a missing or
 * malformed number (trailing characters, not finite) prints "TOOL: OPTION expects N number(s),
 * got '...'" and returns -1. */
int gf_cli_numbers(const char *tool, int argc, char **argv, int *i, int n, double *out);
/* The same for one whole number. */
int gf_cli_int(const char *tool, int argc, char **argv, int *i, int *out);
/* One whole number in [lo, hi]; otherwise "TOOL: OPTION must be between LO and HI, got '...'". */
int gf_cli_int_in(const char *tool, int argc, char **argv, int *i, int lo, int hi, int *out);
/* One number above 0; otherwise "TOOL: OPTION must be positive, got '...'". */
int gf_cli_positive(const char *tool, int argc, char **argv, int *i, double *out);

#endif
