# The two commands README.md promises: `make serve` and `make test`.
# Both install missing Debian packages first, then configure and build with CMake + Ninja.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: deps configure build test serve clean

deps:
	bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

serve: build
	$(BUILD_DIR)/server/uopd --listen=127.0.0.1:50051 --metrics=127.0.0.1:9464

clean:
	rm -rf $(BUILD_DIR)
