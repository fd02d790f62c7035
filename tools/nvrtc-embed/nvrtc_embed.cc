// rm-nvrtc-embed: a build-time program that compiles one CUDA source with
// NVRTC (dlopen'd from the path given, so nothing links it) into PTX and
// cubins, and writes them as byte arrays in a C++ source for libringmaster
// (agent/src/gpu/kernels/embedded_image.h).
//
//   rm-nvrtc-embed --nvrtc LIBNVRTC --source FILE.cu --include DIR...
//       --ptx compute_80 --cubin sm_80 --cubin sm_90 --function NAME --output OUT.cc
//
// NVRTC makes the cubins itself (no ptxas needed). Exits non-zero, with
// NVRTC's log, when the source does not compile.
#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Nvrtc {
  decltype(&::nvrtcVersion) Version = nullptr;
  decltype(&::nvrtcGetErrorString) GetErrorString = nullptr;
  decltype(&::nvrtcCreateProgram) CreateProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) DestroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) CompileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) GetProgramLog = nullptr;
  decltype(&::nvrtcGetPTXSize) GetPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) GetPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) GetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) GetCUBIN = nullptr;
};

[[noreturn]] void Fail(const std::string& msg) {
  std::cerr << "rm-nvrtc-embed: " << msg << "\n";
  std::exit(1);
}

template <typename F>
void Sym(void* lib, const char* name, F* out) {
  void* p = ::dlsym(lib, name);
  if (!p) Fail(std::string("the NVRTC library lacks ") + name);
  *out = reinterpret_cast<F>(p);
}

Nvrtc Load(const std::string& path) {
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) Fail("cannot load " + path + ": " + ::dlerror());
  Nvrtc n;
  Sym(lib, "nvrtcVersion", &n.Version);
  Sym(lib, "nvrtcGetErrorString", &n.GetErrorString);
  Sym(lib, "nvrtcCreateProgram", &n.CreateProgram);
  Sym(lib, "nvrtcDestroyProgram", &n.DestroyProgram);
  Sym(lib, "nvrtcCompileProgram", &n.CompileProgram);
  Sym(lib, "nvrtcGetProgramLogSize", &n.GetProgramLogSize);
  Sym(lib, "nvrtcGetProgramLog", &n.GetProgramLog);
  Sym(lib, "nvrtcGetPTXSize", &n.GetPTXSize);
  Sym(lib, "nvrtcGetPTX", &n.GetPTX);
  Sym(lib, "nvrtcGetCUBINSize", &n.GetCUBINSize);
  Sym(lib, "nvrtcGetCUBIN", &n.GetCUBIN);
  return n;
}

struct Image {
  bool ptx;
  int arch;
  std::vector<char> bytes;
};

// "compute_80" / "sm_90" -> 80 / 90.
int ArchNumber(const std::string& arch) {
  const auto us = arch.find('_');
  if (us == std::string::npos) Fail("bad architecture '" + arch + "'");
  return std::atoi(arch.c_str() + us + 1);
}

Image Compile(const Nvrtc& n, const std::string& source, const std::string& name,
              const std::vector<std::string>& includes, const std::string& arch, bool ptx) {
  nvrtcProgram prog = nullptr;
  auto check = [&](nvrtcResult r, const char* what) {
    if (r != NVRTC_SUCCESS) Fail(std::string(what) + " (" + arch + "): " + n.GetErrorString(r));
  };
  check(n.CreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "--std=c++17",
                                   "--extra-device-vectorization"};
  for (const auto& dir : includes) opts.push_back("--include-path=" + dir);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult r = n.CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  n.GetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) n.GetProgramLog(prog, log.data());
  if (r != NVRTC_SUCCESS) Fail(name + " does not compile for " + arch + ":\n" + log);
  if (log_size > 1) std::cerr << "rm-nvrtc-embed: " << name << " (" << arch << "):\n" << log << "\n";
  Image img{ptx, ArchNumber(arch), {}};
  size_t size = 0;
  if (ptx) {
    check(n.GetPTXSize(prog, &size), "nvrtcGetPTXSize");  // the NUL included
    img.bytes.resize(size);
    check(n.GetPTX(prog, img.bytes.data()), "nvrtcGetPTX");
  } else {
    check(n.GetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    img.bytes.resize(size);
    check(n.GetCUBIN(prog, img.bytes.data()), "nvrtcGetCUBIN");
  }
  n.DestroyProgram(&prog);
  if (img.bytes.empty()) Fail("NVRTC gave an empty image for " + arch);
  return img;
}

void Write(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) Fail("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) Fail("cannot rename " + tmp + " to " + path);
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, source_path, output, function;
  std::vector<std::string> includes, ptx_archs, cubin_archs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) Fail("option " + a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--nvrtc") {
      lib = v;
    } else if (a == "--source") {
      source_path = v;
    } else if (a == "--include") {
      includes.push_back(v);
    } else if (a == "--ptx") {
      ptx_archs.push_back(v);
    } else if (a == "--cubin") {
      cubin_archs.push_back(v);
    } else if (a == "--function") {
      function = v;
    } else if (a == "--output") {
      output = v;
    } else {
      Fail("unknown option " + a);
    }
  }
  if (lib.empty() || source_path.empty() || output.empty() || function.empty())
    Fail("--nvrtc, --source, --function and --output are required");

  std::ifstream in(source_path, std::ios::binary);
  if (!in) Fail("cannot read " + source_path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string source = ss.str();
  const std::string name = source_path.substr(source_path.find_last_of('/') + 1);

  const Nvrtc n = Load(lib);
  int major = 0, minor = 0;
  n.Version(&major, &minor);
  std::vector<Image> images;
  for (const auto& a : ptx_archs) images.push_back(Compile(n, source, name, includes, a, true));
  for (const auto& a : cubin_archs) images.push_back(Compile(n, source, name, includes, a, false));

  std::ostringstream out;
  out << "// Generated at build time by rm-nvrtc-embed (tools/nvrtc-embed) from " << name << " with NVRTC "
      << major << "." << minor << ": do not edit.\n"
      << "#include \"gpu/kernels/embedded_image.h\"\n\nnamespace ringmaster::internal {\nnamespace {\n";
  for (size_t k = 0; k < images.size(); ++k) {
    out << "\n// " << (images[k].ptx ? "PTX compute_" : "cubin sm_") << images[k].arch << ", "
        << images[k].bytes.size() << " bytes\nalignas(64) const unsigned char kImage" << k << "[] = {";
    for (size_t b = 0; b < images[k].bytes.size(); ++b) {
      if (b % 20 == 0) out << "\n ";
      out << ' ' << static_cast<unsigned>(static_cast<unsigned char>(images[k].bytes[b])) << ',';
    }
    out << "\n};\n";
  }
  out << "\nconst EmbeddedKernelImage kImages[] = {\n";
  for (size_t k = 0; k < images.size(); ++k)
    out << "    {" << (images[k].ptx ? "true" : "false") << ", " << images[k].arch << ", kImage" << k
        << ", sizeof(kImage" << k << ")},\n";
  out << "};\n\n}  // namespace\n\n"
      << "std::span<const EmbeddedKernelImage> " << function << "() {\n  return kImages;\n}\n\n"
      << "const char* " << function << "Origin() {\n  return \"NVRTC " << major << "." << minor
      << "\";\n}\n\n}  // namespace ringmaster::internal\n";
  Write(output, out.str());
  return 0;
}
