# Build only what the course's local model server loads (setup.sh and the bundle's install.sh pass this file as
# -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>). CMake runs it right after llama.cpp's own project() call, so it
# can turn off two parts llama-cpp-python builds by default but a text-only chat model never loads:
#   - the "common" library (argument parsing, chat templates, downloads: llama.cpp's command-line tools use it;
#     llama-cpp-python forces it on but installs only libllama and libggml*);
#   - the multimodal library (libmtmd: images and audio; llama-cpp-python imports it only for vision models).
# On 2 cores this cuts the first build from minutes to about a minute and a half (docs/measurements.md).
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp: build the common library" FORCE)
set(LLAVA_BUILD OFF CACHE BOOL "llama-cpp-python: build the multimodal library" FORCE)
