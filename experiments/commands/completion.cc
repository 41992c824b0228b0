// `normlab completion bash|zsh`: a completion script for the shell, made at run time from the
// command line's own parser (every subcommand, its flags and their help lines) and the registries
// (the values of the flags that take a norm, an architecture, a data set, an optimizer, ...), so
// that it lists what this binary accepts and never goes stale.
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "experiments/commands/command.h"
#include "experiments/models/archs.h"
#include "experiments/registry/datasets.h"
#include "experiments/registry/entries.h"
#include "experiments/registry/layers.h"
#include "experiments/registry/optimizers.h"

namespace normlab::experiments::commands {

namespace {

// The shells a script is made for.
const std::vector<std::string>& shells() {
  static const std::vector<std::string> names{"bash", "zsh"};
  return names;
}

// One flag or positional argument of a subcommand, as the completion scripts see it.
struct Arg {
  std::vector<std::string> names;    // "-h", "--help"; the positional's name ("shell") for a positional
  std::string help;                  // the first line of its help text
  bool takes_value = false;          // false for a flag such as --quick
  bool list = false;                 // a list of values separated by ','
  std::vector<std::string> choices;  // the values it accepts when they are a fixed set, else empty
};

// A subcommand ("" for normlab itself): its flags and positional arguments in --help's order.
struct Sub {
  std::string name;
  std::string help;
  std::vector<Arg> flags;
  std::vector<Arg> positionals;
};

// The names of every registry a flag may take a name from.
std::vector<std::vector<std::string>> registries() {
  return {names_in(norms()),    names_in(activations()), names_in(archs()),
          names_in(datasets()), names_in(optimizers()),  names_in(schedules())};
}

// {"a", "b", "c"} from "{a,b,c}" (the description of a CLI::IsMember check), else {}.
std::vector<std::string> member_set(const std::string& d) {
  if (d.size() < 3 || d.front() != '{' || d.back() != '}') return {};
  std::vector<std::string> items{""};
  for (size_t i = 1; i + 1 < d.size(); ++i)
    if (d[i] == ',') items.emplace_back();
    else items.back() += d[i];
  for (const std::string& s : items)
    if (s.empty()) return {};
  return items;
}

// Whether `word` occurs in `text` as a whole word (not inside a longer name such as "batch-size").
bool has_word(const std::string& text, const std::string& word) {
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || !name_char(text[at - 1])) && (end == text.size() || !name_char(text[end]))) return true;
  }
  return false;
}

// The values an option accepts when they are a fixed set: those of its CLI::IsMember check; else,
// when its checks accept every name of a registry (and reject a word that is no name), that
// registry's names (--norm's norm_name()); else, for an option without checks (its value is looked
// up later) whose help text names every entry of a registry, that registry's names (--dataset,
// --activation, --schedule).
std::vector<std::string> choices_of(const CLI::Option& option) {
  // get_validator is not const in CLI11; the checks are only read (and run on copies of words).
  auto& o = const_cast<CLI::Option&>(option);
  std::vector<const CLI::Validator*> checks;
  for (int i = 0;; ++i) {
    try {
      checks.push_back(o.get_validator(i));
    } catch (const CLI::OptionNotFound&) {
      break;
    }
  }
  const std::vector<std::vector<std::string>> names = registries();
  if (checks.empty()) {
    for (const std::vector<std::string>& set : names) {
      bool all = !set.empty();
      for (const std::string& n : set) all = all && has_word(option.get_description(), n);
      if (all) return set;
    }
    return {};
  }
  for (const CLI::Validator* v : checks)
    if (std::vector<std::string> set = member_set(v->get_description()); !set.empty()) return set;
  auto accepts = [&checks](const std::string& word) {
    for (const CLI::Validator* v : checks) {
      std::string copy = word;
      if (!(*v)(copy).empty()) return false;
    }
    return true;
  };
  if (accepts("\x01 not a name")) return {};
  for (const std::vector<std::string>& set : names) {
    bool all = !set.empty();
    for (const std::string& n : set) all = all && accepts(n);
    if (all) return set;
  }
  return {};
}

Arg arg_of(const CLI::Option& o) {
  Arg a;
  if (o.get_positional()) {
    a.names = {o.get_name(true, false)};
  } else {
    for (const std::string& s : o.get_snames()) a.names.push_back("-" + s);
    for (const std::string& l : o.get_lnames()) a.names.push_back("--" + l);
  }
  const std::string& d = o.get_description();
  a.help = d.substr(0, d.find('\n'));
  a.takes_value = o.get_expected_max() != 0;  // add_flag sets expected(0)
  a.list = o.get_delimiter() != '\0';
  if (a.takes_value) a.choices = choices_of(o);
  return a;
}

Sub sub_of(const CLI::App& app, const std::string& name) {
  Sub s{.name = name, .help = app.get_description()};
  for (const CLI::Option* o : app.get_options()) (o->get_positional() ? s.positionals : s.flags).push_back(arg_of(*o));
  return s;
}

// normlab itself (name "") and every subcommand, in --help's order.
std::vector<Sub> describe(const CLI::App& root) {
  std::vector<Sub> subs{sub_of(root, "")};
  for (const CLI::App* a : root.get_subcommands([](const CLI::App*) { return true; }))
    subs.push_back(sub_of(*a, a->get_name()));
  return subs;
}

// s as one single-quoted shell word ('it'\''s').
std::string single_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string joined(const std::vector<std::string>& words, const std::string& sep = " ") {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : sep) + w;
  return s;
}

// At most `width` characters of a help line, cut at a space ("..." marking the cut).
std::string short_help(const std::string& help, size_t width = 90) {
  if (help.size() <= width) return help;
  const size_t cut = help.rfind(' ', width - 3);
  return help.substr(0, cut == std::string::npos ? width - 3 : cut) + "...";
}

// ---- bash ----

// The branch of _normlab's `case "$sub"` for one subcommand (normlab itself for ""): after a flag
// that takes a value, its values (or nothing: bash completes file names); else its flags, or, for
// a word that is no flag, the subcommands (normlab itself) or its first positional's values.
std::string bash_case(const Sub& sub, const std::vector<std::string>& sub_names) {
  std::string s = "    " + single_quoted(sub.name) + ")\n";
  std::vector<std::string> flag_names, free_values;
  std::string value_cases;
  for (const Arg& a : sub.flags) {
    for (const std::string& n : a.names) flag_names.push_back(n);
    if (!a.takes_value) continue;
    if (a.choices.empty()) {
      for (const std::string& n : a.names) free_values.push_back(n);
      continue;
    }
    value_cases += "        " + joined(a.names, "|") + ") _normlab_values " + single_quoted(joined(a.choices)) + " " +
                   (a.list ? "1" : "0") + "; return 0 ;;\n";
  }
  if (!free_values.empty())
    value_cases += "        " + joined(free_values, "|") + ") return 0 ;;  # a value: file names (complete -o default)\n";
  if (!value_cases.empty()) s += "      case \"$prev\" in\n" + value_cases + "      esac\n";
  std::vector<std::string> words = sub.name.empty() ? sub_names : std::vector<std::string>{};
  if (!sub.name.empty() && !sub.positionals.empty()) words = sub.positionals.front().choices;
  s += "      if [[ \"$cur\" == -* ]]; then _normlab_values " + single_quoted(joined(flag_names)) + " 0\n";
  if (!words.empty()) s += "      else _normlab_values " + single_quoted(joined(words)) + " 0\n";
  return s + "      fi\n      return 0 ;;\n";
}

std::string bash_script(const std::vector<Sub>& subs) {
  std::string s =
      "# bash completion for normlab, made by `normlab completion bash`: the subcommands, their flags\n"
      "# and the values of the flags that take a name from a fixed set (norms, architectures, ...).\n"
      "# Load it with: source <(normlab completion bash)\n"
      "\n"
      "# Completes the value being typed (cur) from the words $1; $2 = 1: a comma-separated list.\n"
      "_normlab_values() {\n"
      "  local pre='' last=\"$cur\"\n"
      "  if [[ \"$2\" == 1 && \"$cur\" == *,* ]]; then pre=\"${cur%,*},\"; last=\"${cur##*,}\"; fi\n"
      "  COMPREPLY=($(compgen -P \"$pre\" -W \"$1\" -- \"$last\"))\n"
      "}\n"
      "\n"
      "_normlab() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev='' sub='' i\n"
      "  (( COMP_CWORD > 0 )) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      "  # --flag=value: bash splits the word at '=' (COMP_WORDBREAKS).\n"
      "  if [[ \"$cur\" == '=' ]]; then cur=''\n"
      "  elif [[ \"$prev\" == '=' ]] && (( COMP_CWORD > 1 )); then prev=\"${COMP_WORDS[COMP_CWORD-2]}\"; fi\n"
      "  # The subcommand: the first word after normlab that is not a flag.\n"
      "  for (( i = 1; i < COMP_CWORD; i++ )); do\n"
      "    case \"${COMP_WORDS[i]}\" in -*) ;; *) sub=\"${COMP_WORDS[i]}\"; break ;; esac\n"
      "  done\n"
      "  COMPREPLY=()\n"
      "  case \"$sub\" in\n";
  std::vector<std::string> sub_names;
  for (const Sub& sub : subs)
    if (!sub.name.empty()) sub_names.push_back(sub.name);
  for (const Sub& sub : subs) s += bash_case(sub, sub_names);
  s += "  esac\n"
       "}\n"
       "\n"
       "complete -o default -F _normlab normlab\n";
  return s;
}

// ---- zsh ----

// Text inside an _arguments explanation ("[...]") or a _describe item: '\', '[', ']', ':', '$' and
// '`' escaped with a backslash (as clap's zsh scripts do).
std::string zsh_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '[' || c == ']' || c == ':' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

// A value in an _arguments action "(a b c)": every character that is not a plain name character
// escaped with a backslash.
std::string zsh_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' && c != '+') out += '\\';
    out += c;
  }
  return out;
}

// The _arguments action of an argument: its values, a comma-separated list of them, or file names.
std::string zsh_action(const Arg& a) {
  std::vector<std::string> values;
  for (const std::string& v : a.choices) values.push_back(zsh_value(v));
  if (values.empty()) return "_files";
  if (a.list) return "_sequence compadd - " + joined(values);
  return "(" + joined(values) + ")";
}

// The branch of _normlab's `case $sub` for one subcommand: _arguments with a spec per flag name
// ("--norm[the help]:norm:(none batch ...)") and per positional ("1:shell:(bash zsh)").
std::string zsh_case(const Sub& sub) {
  std::string s = "    " + single_quoted(sub.name) + ")\n      _arguments";
  for (const Arg& a : sub.flags)
    for (const std::string& n : a.names) {
      std::string spec = n + "[" + zsh_escaped(short_help(a.help)) + "]";
      if (a.takes_value) spec += ":" + a.names.back().substr(a.names.back().find_first_not_of('-')) + ":" + zsh_action(a);
      s += " \\\n        " + single_quoted(spec);
    }
  for (size_t i = 0; i < sub.positionals.size(); ++i) {
    const Arg& a = sub.positionals[i];
    s += " \\\n        " + single_quoted(std::to_string(i + 1) + ":" + a.names.front() + ":" + zsh_action(a));
  }
  return s + " ;;\n";
}

std::string zsh_script(const std::vector<Sub>& subs) {
  std::string s =
      "#compdef normlab\n"
      "# zsh completion for normlab, made by `normlab completion zsh`: the subcommands, their flags\n"
      "# and the values of the flags that take a name from a fixed set (norms, architectures, ...).\n"
      "# Install it as _normlab in a folder of $fpath, or load it with: source <(normlab completion zsh)\n"
      "\n"
      "_normlab() {\n"
      "  local -a subcommands options\n";
  std::string subcommand_items, option_items;
  for (const Sub& sub : subs) {
    if (!sub.name.empty()) subcommand_items += "    " + single_quoted(sub.name + ":" + zsh_escaped(short_help(sub.help))) + "\n";
    else
      for (const Arg& a : sub.flags)
        for (const std::string& n : a.names) option_items += "    " + single_quoted(n + ":" + zsh_escaped(short_help(a.help))) + "\n";
  }
  s += "  subcommands=(\n" + subcommand_items + "  )\n";
  s += "  options=(\n" + option_items + "  )\n";
  s += "  if (( CURRENT == 2 )); then\n"
       "    if [[ $words[CURRENT] == -* ]]; then _describe -t options 'normlab option' options\n"
       "    else _describe -t subcommands 'normlab subcommand' subcommands; fi\n"
       "    return\n"
       "  fi\n"
       "  local sub=$words[2]\n"
       "  shift words\n"
       "  (( CURRENT-- ))\n"
       "  case $sub in\n";
  for (const Sub& sub : subs)
    if (!sub.name.empty()) s += zsh_case(sub);
  s += "  esac\n"
       "}\n"
       "\n"
       "# Autoloaded from $fpath: complete now; sourced: register the function.\n"
       "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
       "  _normlab \"$@\"\n"
       "else\n"
       "  compdef _normlab normlab\n"
       "fi\n";
  return s;
}

class CompletionCommand : public Command {
 public:
  void add_flags(CLI::App& a) override {
    a.add_option("shell", shell_, "the shell: " + joined(shells(), " or "))
        ->required()
        ->check(CLI::Validator(
            [](std::string& s) -> std::string {
              for (const std::string& name : shells())
                if (name == s) return "";
              return "unknown shell '" + s + "' (expected one of: " + joined(shells(), ", ") + ")";
            },
            "{" + joined(shells(), ",") + "}"));  // as CLI::IsMember's: --help and the scripts show it
    a.footer("Load it with: source <(normlab completion bash), or install it: bash-completion's folder "
             "(share/bash-completion/completions/normlab), zsh's $fpath (_normlab).");
  }
  int run(const Invocation& inv) override {
    const std::vector<Sub> subs = describe(*inv.app);
    const std::string script = shell_ == "bash" ? bash_script(subs) : zsh_script(subs);
    std::fputs(script.c_str(), stdout);
    return 0;
  }

 private:
  std::string shell_;
};

}  // namespace

std::unique_ptr<Command> make_completion_command() { return std::make_unique<CompletionCommand>(); }

}  // namespace normlab::experiments::commands
