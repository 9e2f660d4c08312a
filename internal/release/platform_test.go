package release_test

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"os"
	"runtime"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
)

var (
	elfHeader   = releasetest.ELFHeader
	machoHeader = releasetest.MachOHeader
	peHeader    = releasetest.PEHeader
)

func elfExe(machine elf.Machine, class elf.Class, order elf.Data, osabi elf.OSABI) []byte {
	return elfHeader(machine, class, order, osabi, elf.ET_EXEC)
}

const peExe = pe.IMAGE_FILE_EXECUTABLE_IMAGE

var (
	linuxAmd64  = elfExe(elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE)
	linuxArm64  = elfExe(elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE)
	darwinArm64 = machoHeader(macho.CpuArm64, macho.TypeExec)
	winAmd64    = peHeader(pe.IMAGE_FILE_MACHINE_AMD64, peExe)
)

func TestCheckExecutable(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		platform string
		want     string // "" for accepted, else a part of the message
	}{
		{"linux amd64", linuxAmd64, "linux_amd64", ""},
		{"linux arm64", linuxArm64, "linux_arm64", ""},
		{"arm64 build named amd64", linuxArm64, "linux_amd64", "is an executable for linux_arm64, not linux_amd64; build it with GOOS=linux GOARCH=amd64 go build"},
		{"amd64 build named arm64", linuxAmd64, "linux_arm64", "is an executable for linux_amd64, not linux_arm64"},
		{"generic ELF as android", linuxAmd64, "android_amd64", ""},
		{"386", elfExe(elf.EM_386, elf.ELFCLASS32, elf.ELFDATA2LSB, elf.ELFOSABI_NONE), "linux_386", ""},
		{"386 named amd64", elfExe(elf.EM_386, elf.ELFCLASS32, elf.ELFDATA2LSB, elf.ELFOSABI_NONE), "linux_amd64", "for linux_386, not linux_amd64"},
		{"arm", elfExe(elf.EM_ARM, elf.ELFCLASS32, elf.ELFDATA2LSB, elf.ELFOSABI_NONE), "linux_arm", ""},
		{"mips64le", elfExe(elf.EM_MIPS, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE), "linux_mips64le", ""},
		{"mips64le named mips64", elfExe(elf.EM_MIPS, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE), "linux_mips64", "for linux_mips64le, not linux_mips64"},
		{"ppc64 big-endian", elfExe(elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2MSB, elf.ELFOSABI_NONE), "linux_ppc64", ""},
		{"s390x", elfExe(elf.EM_S390, elf.ELFCLASS64, elf.ELFDATA2MSB, elf.ELFOSABI_NONE), "linux_s390x", ""},
		{"unknown machine", elfExe(elf.EM_SPARCV9, elf.ELFCLASS64, elf.ELFDATA2MSB, elf.ELFOSABI_NONE), "linux_amd64", "linux on an architecture Go does not build, not linux_amd64"},
		{"freebsd", elfExe(elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_FREEBSD), "freebsd_amd64", ""},
		{"freebsd named linux", elfExe(elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_FREEBSD), "linux_amd64", "is an executable for freebsd_amd64, not linux_amd64"},
		{"linux named freebsd", linuxAmd64, "freebsd_amd64", "is an executable for linux_amd64 (or another system without freebsd's ELF mark), not freebsd_amd64"},
		{"openbsd", elfExe(elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_OPENBSD), "openbsd_arm64", ""},
		{"solaris as illumos", elfExe(elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_SOLARIS), "illumos_amd64", ""},
		{"ELF object file", elfHeader(elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.ET_REL), "linux_amd64", "is an ELF object file, not an executable"},
		{"ELF named darwin", linuxArm64, "darwin_arm64", "is an ELF executable for linux or another ELF system on arm64, not a darwin_arm64 one"},
		{"ELF named windows", linuxAmd64, "windows_amd64", "not a windows_amd64 one"},

		{"darwin arm64", darwinArm64, "darwin_arm64", ""},
		{"ios arm64", darwinArm64, "ios_arm64", ""},
		{"darwin arm64 named amd64", darwinArm64, "darwin_amd64", "is an executable for darwin_arm64, not darwin_amd64; build it with GOOS=darwin GOARCH=amd64 go build"},
		{"darwin named linux", darwinArm64, "linux_arm64", "is a macOS executable (darwin_arm64), not a linux_arm64 one"},
		{"Mach-O library", machoHeader(macho.CpuAmd64, macho.TypeDylib), "darwin_amd64", "not an executable"},
		{"universal binary", []byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 0}, "darwin_arm64", "is not an executable"},

		{"windows amd64", winAmd64, "windows_amd64", ""},
		{"windows arm64", peHeader(pe.IMAGE_FILE_MACHINE_ARM64, peExe), "windows_arm64", ""},
		{"windows amd64 named arm64", winAmd64, "windows_arm64", "is an executable for windows_amd64, not windows_arm64"},
		{"windows named linux", winAmd64, "linux_amd64", "is a Windows executable (windows_amd64), not a linux_amd64 one"},
		{"windows DLL", peHeader(pe.IMAGE_FILE_MACHINE_AMD64, peExe|pe.IMAGE_FILE_DLL), "windows_amd64", "library or object file"},
		{"windows object", peHeader(pe.IMAGE_FILE_MACHINE_AMD64, 0), "windows_amd64", "library or object file"},

		{"aix", []byte{0x01, 0xf7, 0, 0}, "aix_ppc64", ""},
		{"aix named linux", []byte{0x01, 0xf7, 0, 0}, "linux_ppc64", "is an AIX executable"},
		{"script", []byte("#!/bin/sh\necho hi\n"), "linux_amd64", "is a script"},
		{"text", []byte("package main\n"), "linux_amd64", "is not an executable (no ELF, Mach-O or PE header)"},
		{"empty", nil, "linux_amd64", "is not an executable"},
		{"truncated ELF", []byte("\x7fELF\x02\x01"), "linux_amd64", "corrupt ELF file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goos, goarch, _ := strings.Cut(tt.platform, "_")
			err := release.CheckExecutable(bytes.NewReader(tt.data), goos, goarch)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckExecutable(%s) = %v, want nil", tt.platform, err)
			case tt.want != "" && err == nil:
				t.Fatalf("CheckExecutable(%s) = nil, want an error with %q", tt.platform, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("CheckExecutable(%s) = %q, want it to contain %q", tt.platform, err, tt.want)
			case err != nil && registry.KindOf(err) != registry.Invalid:
				t.Fatalf("error kind = %v, want Invalid", registry.KindOf(err))
			}
		})
	}
}

// TestCheckExecutableOnARealBinary checks the test binary itself, which
// go test built for this machine.
func TestCheckExecutableOnARealBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := release.CheckExecutable(f, runtime.GOOS, runtime.GOARCH); err != nil {
		t.Errorf("the test binary is refused for %s_%s: %v", runtime.GOOS, runtime.GOARCH, err)
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	if err := release.CheckExecutable(f, runtime.GOOS, other); err == nil || !strings.Contains(err.Error(), "not "+runtime.GOOS+"_"+other) {
		t.Errorf("the test binary as %s_%s: %v, want it refused", runtime.GOOS, other, err)
	}
}

func TestCheckPlatform(t *testing.T) {
	tests := []struct {
		os, arch string
		want     string // "" for accepted
	}{
		{"linux", "amd64", ""},
		{"darwin", "arm64", ""},
		{"windows", "arm64", ""},
		{"openbsd", "riscv64", ""},
		{"plan9", "arm", ""},
		{"linux", "x86_64", "unknown platform linux_x86_64: Go calls it linux_amd64 (GOOS=linux GOARCH=amd64)"},
		{"macos", "aarch64", "Go calls it darwin_arm64"},
		{"Linux", "amd64", "Go calls it linux_amd64"},
		{"windows", "arm", "Go builds windows_386, windows_amd64, windows_arm64 for windows"},
		{"darwin", "386", "Go builds darwin_amd64, darwin_arm64 for darwin"},
		{"js", "wasm", "cannot run a provider"},
		{"wasip1", "wasm", "cannot run a provider"},
		{"beos", "ppc", "want <os>_<arch> as `go tool dist list` names them"},
	}
	for _, tt := range tests {
		err := release.CheckPlatform(tt.os, tt.arch)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckPlatform(%s, %s) = %v, want nil", tt.os, tt.arch, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckPlatform(%s, %s) = %v, want an error with %q", tt.os, tt.arch, err, tt.want)
		}
	}
}
