// Running gnuplot for the plots (plot.h): a script to PNG and SVG images, written atomically.
#pragma once
#include <filesystem>
#include <string>

namespace normlab::experiments::report {

// True when the gnuplot command can be run.
bool gnuplot_available();

// A gnuplot string literal: single-quoted, in which gnuplot substitutes nothing (a double-quoted
// one would run `backquoted` commands); a quote is doubled, a line break becomes a space.
std::string gnuplot_quote(const std::string& s);

// Runs the gnuplot script `b` once per format (PNG and SVG, width x height pixels) in dir, each
// image written under a temporary name, checked to be whole and renamed to <dir>/<stem>.png and
// .svg; the script is kept as <dir>/<stem>.gp, headed by `title`. Throws normlab::Error naming the
// image when gnuplot fails or the image is cut short.
void render_script(const std::string& title, const std::string& b, int width, int height,
                   const std::filesystem::path& dir, const std::string& stem);

}  // namespace normlab::experiments::report
