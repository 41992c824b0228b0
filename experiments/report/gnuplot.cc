// Running gnuplot: whether it is installed, and a script rendered to PNG and SVG, each image
// written under a temporary name, checked to be whole and renamed. gnuplot runs without a shell
// (posix_spawn with an argument vector), in the output folder, in its own process group.
#include "experiments/report/gnuplot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "experiments/support/output.h"

namespace normlab::experiments::report {

namespace fs = std::filesystem;

extern "C" char** environ;

bool gnuplot_available() {
  static const bool found = [] {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');)
      if (::access(((d.empty() ? "." : d) + "/gnuplot").c_str(), X_OK) == 0) return true;
    return false;
  }();
  return found;
}

// A gnuplot string literal: single-quoted, in which gnuplot substitutes nothing (a double-quoted
// one would run `backquoted` commands); a quote is doubled, a line break becomes a space.
std::string gnuplot_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c == '\n' || c == '\r' ? ' ' : c);
  return q + "'";
}

namespace {

// Runs `gnuplot script` in `dir` (so that no path of the user's is ever part of a command or a
// script), its own process group (Ctrl-C on the terminal does not kill it halfway), stdin from
// /dev/null and stderr to the file `err` (relative to dir, like the script). Returns the exit status, or throws if it cannot be started.
int run_gnuplot(const fs::path& dir, const std::string& script, const std::string& err) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::string prog = "gnuplot", arg = script;
  char* argv[] = {prog.data(), arg.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error("cannot run gnuplot: " + std::string(std::strerror(rc)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error("cannot wait for gnuplot: " + std::string(std::strerror(errno)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// True when the image file is whole: a PNG ends with its IEND chunk, an SVG with </svg> (gnuplot
// exits 0 on a full disk and leaves a truncated or empty file).
bool image_complete(const fs::path& p, const std::string& ext) {
  std::ifstream f(p, std::ios::binary | std::ios::ate);
  const std::streamoff size = f ? static_cast<std::streamoff>(f.tellg()) : 0;
  if (size < 16) return false;
  const std::streamoff tail = std::min<std::streamoff>(size, 64);
  std::string end(static_cast<size_t>(tail), '\0');
  f.seekg(size - tail);
  f.read(end.data(), tail);
  if (ext == "png") return end.compare(end.size() - 12, 12, std::string("\0\0\0\0IEND\xae\x42\x60\x82", 12)) == 0;
  return end.find("</svg>") != std::string::npos;
}

// The first lines of gnuplot's error output, for a message.
std::string first_lines(const fs::path& p) {
  std::ifstream f(p);
  std::string s(512, '\0');
  f.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<size_t>(f.gcount()));
  return s;
}

}  // namespace

void render_script(const std::string& title, const std::string& b, int width, int height, const fs::path& dir,
                   const std::string& stem) {
  write_file_atomic(dir / (stem + ".gp"), "# " + title + " (render: gnuplot -e \"set terminal pngcairo; set output 'x.png'\" " + stem + ".gp)\n" + b);
  const std::string size = " size " + std::to_string(width) + "," + std::to_string(height);
  struct Format { const char* ext; std::string terminal; };
  for (const Format& f : {Format{"png", "pngcairo" + size + " font 'sans,11'"}, Format{"svg", "svg" + size + " dynamic font 'sans,11'"}}) {
    const std::string out = stem + "." + f.ext, tmp = out + ".tmp", script = out + ".gp.tmp", err = out + ".err";
    write_file_atomic(dir / script, "set terminal " + f.terminal + "\nset output " + gnuplot_quote(tmp) + "\n" + b + "unset output\n");
    std::error_code ec;
    const auto clean = [&] { fs::remove(dir / tmp, ec), fs::remove(dir / script, ec), fs::remove(dir / err, ec); };
    const int rc = run_gnuplot(dir, script, err);  // both names relative to dir
    if (rc != 0 || !image_complete(dir / tmp, f.ext)) {
      const std::string why = rc != 0 ? "gnuplot exited with status " + std::to_string(rc) + ": " + first_lines(dir / err)
                                      : "the image is empty or cut short (is the disk full?)";
      clean();
      throw Error("cannot render " + (dir / out).string() + ": " + why);
    }
    fs::rename(dir / tmp, dir / out, ec);
    if (ec) {
      const std::string why = ec.message();
      clean();
      throw Error("cannot write " + (dir / out).string() + ": " + why);
    }
    clean();
  }
}

}  // namespace normlab::experiments::report
