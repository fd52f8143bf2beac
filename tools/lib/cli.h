/* Command-line options of the tools: numbers checked, so a typo is an error and not a zero. */
#ifndef GF_TOOLS_CLI_H
#define GF_TOOLS_CLI_H

/* Reads the n numbers after option argv[*i] into out and advances *i past them. On a missing or
 * malformed number prints "TOOL: OPTION expects N number(s), got '...'" and returns -1. */
int gf_cli_numbers(const char *tool, int argc, char **argv, int *i, int n, double *out);
/* The same for one whole number. */
int gf_cli_int(const char *tool, int argc, char **argv, int *i, int *out);

#endif
