/* ./micro: the harness's driver over every family's case table and command (micro/registry.c). */
#include "app.h"
#include "micro_tables.h"

int main(int argc, char **argv) {
  return km_app_main(argc, argv, km_all_tables, km_all_table_count, km_all_commands, km_all_command_count);
}
