// `pmindex dump POOL [--from KEY] [--to KEY] [--count N] [--reverse]`: a pool's pairs, one
// "key value" per line, in key order or its reverse, walked with an iterator (bench/dump.h
// says how keys and values are printed).
#include <cstdio>

#include "bench/dump.h"
#include "pmindex/index.h"
#include "tools/command.h"

namespace pmindex::tools {

namespace {

struct DumpArgs {
  std::string path;
  std::string from;
  std::string to;
  uint64_t count = 0;
  bool reverse = false;
  std::string key_format = "auto";
  std::string value_format = "auto";
};

int RunDump(const DumpArgs& args) {
  std::string from;
  if (!bench::ParseKeyArgument(args.from, &from)) {
    std::fprintf(stderr, "pmindex dump: --from '%s': bad escape (use \\xHH or \\\\)\n",
                 args.from.c_str());
    return kExitUsage;
  }
  std::string to;
  if (!bench::ParseKeyArgument(args.to, &to)) {
    std::fprintf(stderr, "pmindex dump: --to '%s': bad escape (use \\xHH or \\\\)\n",
                 args.to.c_str());
    return kExitUsage;
  }
  bench::BytesFormat key_format, value_format;
  bench::ParseBytesFormat(args.key_format, &key_format);
  bench::ParseBytesFormat(args.value_format, &value_format);
  // Read-only: recovery runs in a private copy-on-write mapping, nothing reaches the file.
  Options options;
  options.read_only = true;
  Result<std::unique_ptr<Index>> opened = OpenIndex(args.path, options);
  if (!opened.ok()) {
    std::fprintf(stderr, "pmindex dump: %s\n", opened.status().ToString().c_str());
    return kExitError;
  }
  uint64_t printed = 0;
  const bench::DumpRange range{
      .from = from, .to = to, .count = args.count, .reverse = args.reverse};
  Status s = bench::DumpIndex(*opened.value(), range, key_format, value_format, stdout, &printed);
  std::fflush(stdout);
  if (!s.ok()) {
    std::fprintf(stderr, "pmindex dump: %s: %s\n", args.path.c_str(), s.ToString().c_str());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace

void AddDumpCommand(CLI::App& app, CommandSet& commands) {
  CLI::App* sub =
      app.add_subcommand("dump", "Print a pool's pairs in key order, one 'key value' per line");
  auto args = std::make_shared<DumpArgs>();
  sub->add_option("POOL", args->path, "Pool file")->required();
  sub->add_option("--from", args->from,
                  "First key: decimal for an integer key, else bytes (\\xHH escapes)");
  sub->add_option("--to", args->to,
                  "Print only keys below this one (exclusive); same syntax as --from");
  sub->add_flag("--reverse", args->reverse,
                "Descending key order: from the largest key below --to down to --from");
  sub->add_option("--count", args->count, "Pairs to print (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->default_val(0);
  const auto format_check = CLI::IsMember({"auto", "int", "string"});
  sub->add_option("--key-format", args->key_format,
                  "auto: 8-byte non-printable keys are integers; int; string")
      ->check(format_check)
      ->default_val("auto");
  sub->add_option("--value-format", args->value_format,
                  "auto: 8-byte non-printable values are integers; int; string")
      ->check(format_check)
      ->default_val("auto");
  sub->callback([&commands, args] { commands.selected = [args] { return RunDump(*args); }; });
}

}  // namespace pmindex::tools
