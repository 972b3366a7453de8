// `pmindex get|put|delete POOL KEY ...` and `pmindex load POOL [FILE]`: a pool's pairs one
// at a time, and the pairs `pmindex dump` printed written back. Keys and values are given as
// dump prints them (bench/dump.h): decimal integers or byte strings with \xHH escapes, in the
// format --key-format / --value-format name (auto: a decimal is an integer). put and load
// create the pool with --create INDEX when it does not exist.
#include <cstdio>
#include <memory>
#include <string>

#include "bench/dump.h"
#include "pmindex/index.h"
#include "tools/command.h"

namespace pmindex::tools {

namespace {

struct KvArgs {
  std::string command;  // "get", "put", "delete", "load"
  std::string path;
  std::string key;
  std::string value;
  std::string file = "-";
  std::string create;  // an index name: create the pool if missing
  uint64_t pool_mb = 1024;
  bool insert_only = false;
  bool update_only = false;
  std::string key_format = "auto";
  std::string value_format = "auto";
};

int Fail(const KvArgs& args, const std::string& what) {
  std::fprintf(stderr, "pmindex %s: %s: %s\n", args.command.c_str(), args.path.c_str(),
               what.c_str());
  return kExitError;
}

Result<std::unique_ptr<Index>> Open(const KvArgs& args, bool read_only) {
  Options options;
  options.read_only = read_only;
  if (args.create.empty()) return OpenIndex(args.path, options);
  options.pool_size = args.pool_mb << 20;
  return OpenOrCreateIndex(args.create, args.path, options);
}

// The write or read of one key; the value printed for get.
Status Apply(const KvArgs& args, Index& index, const std::string& key,
             bench::BytesFormat value_format) {
  std::string value;
  if (args.command == "get") {
    Status s = index.lookup(key, &value);
    if (s.ok()) std::printf("%s\n", bench::FormatValue(value, value_format).c_str());
    return s;
  }
  if (args.command == "delete") return index.remove(key);
  if (!bench::ParseValueText(args.value, value_format, &value))
    return Status::InvalidArgument("value '" + args.value + "': bad escape or not an integer");
  if (args.insert_only) return index.insert(key, value);
  if (args.update_only) return index.update(key, value);
  return index.upsert(key, value);
}

int RunPoint(const KvArgs& args) {
  bench::BytesFormat key_format, value_format;
  bench::ParseBytesFormat(args.key_format, &key_format);
  bench::ParseBytesFormat(args.value_format, &value_format);
  std::string key;
  if (!bench::ParseKeyText(args.key, key_format, &key)) {
    std::fprintf(stderr, "pmindex %s: key '%s': bad escape or not an integer\n",
                 args.command.c_str(), args.key.c_str());
    return kExitUsage;
  }
  Result<std::unique_ptr<Index>> opened = Open(args, args.command == "get");
  if (!opened.ok()) return Fail(args, opened.status().ToString());
  Index& index = *opened.value();
  if (key.size() != 8 && !index.traits().byte_keys) {
    return Fail(args, index.traits().name + " takes 8-byte integer keys: give KEY in decimal");
  }
  const Status s = Apply(args, index, key, value_format);
  std::fflush(stdout);
  const Status closed = index.close();
  if (!s.ok()) return Fail(args, "key " + args.key + ": " + s.ToString());
  if (!closed.ok()) return Fail(args, closed.ToString());
  return kExitOk;
}

int RunLoad(const KvArgs& args) {
  bench::BytesFormat key_format, value_format;
  bench::ParseBytesFormat(args.key_format, &key_format);
  bench::ParseBytesFormat(args.value_format, &value_format);
  std::FILE* in = args.file == "-" ? stdin : std::fopen(args.file.c_str(), "r");
  if (in == nullptr) {
    std::fprintf(stderr, "pmindex load: %s: cannot open\n", args.file.c_str());
    return kExitError;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned(in == stdin ? nullptr : in, std::fclose);
  Result<std::unique_ptr<Index>> opened = Open(args, false);
  if (!opened.ok()) return Fail(args, opened.status().ToString());
  bench::LoadProgress progress;
  progress.fn = [](uint64_t n) {
    std::fprintf(stderr, "  %llu pairs loaded\n", static_cast<unsigned long long>(n));
  };
  uint64_t loaded = 0;
  const Status s =
      bench::LoadPairs(*opened.value(), in, key_format, value_format, progress, &loaded);
  const Status closed = opened.value()->close();
  std::fprintf(stderr, "pmindex load: %llu pairs written to %s\n",
               static_cast<unsigned long long>(loaded), args.path.c_str());
  if (!s.ok()) return Fail(args, (args.file == "-" ? "stdin" : args.file) + ": " + s.ToString());
  if (!closed.ok()) return Fail(args, closed.ToString());
  return kExitOk;
}

void AddFormatOptions(CLI::App* sub, KvArgs& args) {
  const auto format_check = CLI::IsMember({"auto", "int", "string"});
  sub->add_option("--key-format", args.key_format,
                  "auto: a decimal is an integer key, else bytes (\\xHH escapes); int; string")
      ->check(format_check)
      ->default_val("auto");
  sub->add_option("--value-format", args.value_format,
                  "auto: a decimal is an 8-byte integer value, else bytes; int; string")
      ->check(format_check)
      ->default_val("auto");
}

void AddCreateOptions(CLI::App* sub, KvArgs& args) {
  sub->add_option("--create", args.create, "Create the pool with this index if it is missing");
  sub->add_option("--pool-mb", args.pool_mb, "Size of a pool --create makes (MiB)")
      ->check(CLI::PositiveNumber)
      ->default_val(1024);
}

CLI::App* AddPoint(CLI::App& app, CommandSet& commands, const std::string& name,
                   const std::string& help) {
  CLI::App* sub = app.add_subcommand(name, help);
  auto args = std::make_shared<KvArgs>();
  args->command = name;
  sub->add_option("POOL", args->path, "Pool file")->required();
  sub->add_option("KEY", args->key, "Key: decimal for an integer key, else bytes")->required();
  if (name == "put") {
    sub->add_option("VALUE", args->value, "Value: decimal for an 8-byte integer, else bytes")
        ->required();
    auto* ins = sub->add_flag("--insert", args->insert_only, "Fail if the key is present");
    sub->add_flag("--update", args->update_only, "Fail if the key is absent")->excludes(ins);
    AddCreateOptions(sub, *args);
  }
  AddFormatOptions(sub, *args);
  sub->callback([&commands, args] { commands.selected = [args] { return RunPoint(*args); }; });
  return sub;
}

}  // namespace

void AddKvCommands(CLI::App& app, CommandSet& commands) {
  AddPoint(app, commands, "get", "Print the value of KEY (exit 1 if it is absent)");
  AddPoint(app, commands, "put", "Write KEY -> VALUE (insert or update)");
  AddPoint(app, commands, "delete", "Remove KEY (exit 1 if it is absent)");
  CLI::App* sub = app.add_subcommand(
      "load", "Write the 'key value' lines of FILE (as `pmindex dump` prints them) into a pool");
  auto args = std::make_shared<KvArgs>();
  args->command = "load";
  sub->add_option("POOL", args->path, "Pool file")->required();
  sub->add_option("FILE", args->file, "Input, '-' for standard input")->default_val("-");
  AddCreateOptions(sub, *args);
  AddFormatOptions(sub, *args);
  sub->callback([&commands, args] { commands.selected = [args] { return RunLoad(*args); }; });
}

}  // namespace pmindex::tools
