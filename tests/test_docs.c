/* tests/test_docs.c — what the README and bench/RESULTS.md promise: the
 * README's example compiles and prints what the README says (against the
 * single-file dist/devkit.h, as C99 and C++, and against the in-tree header;
 * tests/readme_example.sh), and every table in RESULTS.md has as many cells
 * in each row as in its header. */
#define _GNU_SOURCE
#include "test.h"
#include <sys/wait.h>
#include <unistd.h>

/* the repository root: the test binary lives in ROOT/build/ */
static int repo_root(char *dir, size_t cap) {
  char exe[1024];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = 0;
  if (strrchr(exe, '/')) *strrchr(exe, '/') = 0;
  snprintf(dir, cap, "%.1000s/..", exe);
  return 1;
}

DKT_TEST(docs_readme_example_single_header, DKT_ONCE) {
  char root[1100], cmd[2600], out[16384];
  FILE *p;
  size_t got;
  int st;
  if (!repo_root(root, sizeof root)) { dkt_skip(t, "skipped: no /proc/self/exe"); return; }
  snprintf(cmd, sizeof cmd, "bash '%s/tests/readme_example.sh' '%s' 2>&1", root, root);
  p = popen(cmd, "r");
  if (!p) { dkt_fail_at(t, __FILE__, __LINE__, "popen failed"); return; }
  got = fread(out, 1, sizeof out - 1, p);
  out[got] = 0;
  st = pclose(p);
  DKT_CHECK(t, WIFEXITED(st) && WEXITSTATUS(st) == 0, "tests/readme_example.sh failed:\n%s", out);
  DKT_CHECK(t, strstr(out, "C99, single header: output matches") && strstr(out, "C++11, single header: output matches") &&
                   strstr(out, "C99, in-tree devkit.h: output matches"),
            "not every build of the README example ran:\n%s", out);
}

/* cells of a markdown table row: the number of unescaped '|' minus one */
static int cells(const char *line) {
  int n = 0;
  const char *p;
  for (p = line; *p && *p != '\n'; p++)
    if (*p == '|' && (p == line || p[-1] != '\\')) n++;
  return n - 1;
}

DKT_TEST(docs_results_tables_are_rectangular, DKT_ONCE) {
  char root[1100], path[1200], line[8192], head[8192];
  FILE *f;
  int lineno = 0, header_cells = -1, rows = 0, tables = 0;
  if (!repo_root(root, sizeof root)) { dkt_skip(t, "skipped: no /proc/self/exe"); return; }
  snprintf(path, sizeof path, "%s/bench/RESULTS.md", root);
  f = fopen(path, "r");
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open %s", path); return; }
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (line[0] != '|') { header_cells = -1; continue; }
    if (header_cells < 0) {
      header_cells = cells(line);
      snprintf(head, sizeof head, "%s", line);
      tables++;
      continue;
    }
    rows++;
    {
      /* a fixed layout: no cell holds a run of spaces inside its text (a
       * number pushed into its neighbour's cell) or a thousands separator */
      const char *p;
      for (p = line + 1; *p && *p != '\n'; p++) {
        DKT_CHECK(t, !(p[0] == ' ' && p[1] == ' ' && p[-1] != '|' && p[2] != '|' && p[2] != ' '),
                  "bench/RESULTS.md:%d: a run of spaces inside a cell:\n  %s", lineno, line);
        DKT_CHECK(t, !(p[0] == ',' && p[-1] >= '0' && p[-1] <= '9' && p[1] >= '0' && p[1] <= '9'),
                  "bench/RESULTS.md:%d: a thousands separator inside a cell:\n  %s", lineno, line);
      }
    }
    DKT_CHECK(t, cells(line) == header_cells, "bench/RESULTS.md:%d has %d cells, its table's header %d:\n  %s  %s", lineno,
              cells(line), header_cells, head, line);
  }
  fclose(f);
  DKT_CHECK(t, tables > 0 && rows > 0, "bench/RESULTS.md has no tables (%d) or rows (%d)", tables, rows);
}
