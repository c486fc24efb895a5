#include "compiler/driver/cli.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

namespace pipec {

namespace {

// The help page in the style of the rest of pipec:
//
//   usage: pipec run [options] SPEC
//
//   <about>
//
//   options:
//     --take N               stop after N output elements (-1 or more; default: -1)
class HelpFormatter : public CLI::FormatterBase {
 public:
  explicit HelpFormatter(std::string operands) : operands_(std::move(operands)) {}

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode) const override {
    std::string out = fmt::format("usage: {} [options]{}{}\n", name, operands_.empty() ? "" : " ", operands_);
    if (!app->get_description().empty()) out += "\n" + app->get_description() + "\n";
    // The command's own flags first, -h last; flags declared in a group of their own (`->group("...")`)
    // follow under that group's heading, in the order the groups first appear.
    std::vector<std::string> groups = {kDefaultGroup};
    std::vector<const CLI::Option*> flags =
        app->get_options([&](const CLI::Option* o) { return o->nonpositional() && o != app->get_help_ptr(); });
    for (const CLI::Option* opt : flags)
      if (std::find(groups.begin(), groups.end(), opt->get_group()) == groups.end()) groups.push_back(opt->get_group());
    for (const std::string& group : groups) {
      out += group == kDefaultGroup ? "\noptions:\n" : "\n" + group + ":\n";
      for (const CLI::Option* opt : flags)
        if (opt->get_group() == group) out += option_line(*opt);
      if (group == kDefaultGroup && app->get_help_ptr()) out += option_line(*app->get_help_ptr());
    }
    if (std::string footer = app->get_footer(); !footer.empty()) out += "\n" + footer + "\n";
    return out;
  }

 private:
  static constexpr size_t kColumn = 24;
  static constexpr const char* kDefaultGroup = "Options";  // CLI11's group for an option given none

  // "  --take N               stop after N output elements (-1 or more; default: -1)"
  static std::string option_line(const CLI::Option& opt) {
    std::string left = names(opt);
    std::string text = opt.get_description();
    std::vector<std::string> notes;
    // get_type_name() is the value's name followed by each check's description, `:`-separated.
    std::string type = opt.get_type_name();
    if (size_t colon = type.find(':'); colon != std::string::npos) notes.push_back(type.substr(colon + 1));
    if (!opt.get_default_str().empty()) notes.push_back("default: " + opt.get_default_str());
    if (!notes.empty()) text += " (" + join(notes, "; ") + ")";
    // Continuation lines of a long description line up under its start.
    std::string indent(kColumn + 2, ' ');
    for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
      text.insert(at + 1, indent);
    if (left.size() + 1 > kColumn) return fmt::format("  {}\n{}{}\n", left, indent, text);
    return fmt::format("  {:<{}}{}\n", left, kColumn, text);
  }

  // "-w, --no-warnings", "-I DIR", "--take N".
  static std::string names(const CLI::Option& opt) {
    std::vector<std::string> all;
    for (const auto& s : opt.get_snames()) all.push_back("-" + s);
    for (const auto& l : opt.get_lnames()) all.push_back("--" + l);
    std::string out = join(all, ", ");
    if (opt.get_type_size() > 0) {
      std::string type = opt.get_type_name();
      out += " " + type.substr(0, type.find(':'));
    }
    return out;
  }

  static std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
    return out;
  }

  std::string operands_;
};

}  // namespace

std::string spoken_list(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

std::unique_ptr<CLI::App> make_command(const std::string& name, const std::string& operands, const std::string& about) {
  auto app = std::make_unique<CLI::App>(about, "pipec " + name);
  app->formatter(std::make_shared<HelpFormatter>(operands));
  app->set_help_flag("-h,--help", "print this help");
  return app;
}

CLI::Option* add_repeatable(CLI::App& app, const std::string& name, std::vector<std::string>& into,
                            const std::string& help, const std::string& value_name) {
  return app.add_option(name, into, help)->allow_extra_args(false)->type_name(value_name);
}

std::optional<int> parse_command_line(CLI::App& app, const Args& args) {
  // CLI11 takes the words last first.
  std::vector<std::string> words(args.rbegin(), args.rend());
  try {
    app.parse(words);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << fmt::format("{}: {} (see `{} --help`)\n", app.get_name(), e.what(), app.get_name());
    return 2;
  }
  return std::nullopt;
}

CLI::Validator in_range(int64_t lo, int64_t hi) {
  std::string range = hi == INT64_MAX ? fmt::format("{} or more", lo) : fmt::format("{} to {}", lo, hi);
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        // The conversion to the option's integer type reports text that is not a number.
        try {
          size_t end = 0;
          long long v = std::stoll(text, &end);
          if (end != text.size() || (v >= lo && v <= hi)) return "";
        } catch (const std::exception&) {
          return "";
        }
        if (hi == INT64_MAX) return fmt::format("must be {} or more, not {}", lo, text);
        return fmt::format("must be between {} and {}, not {}", lo, hi, text);
      },
      range);
}

CLI::Validator one_of(std::vector<std::string> choices) {
  std::string spoken = spoken_list(choices);
  return CLI::Validator(
      [choices, spoken](std::string& text) -> std::string {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return "";
        return fmt::format("must be {}, not `{}`", spoken, text);
      },
      "");
}

}  // namespace pipec
