package release

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"debug/plan9obj"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"trove.dev/trove/internal/registry"
)

// platforms are the "<os>_<arch>" pairs `go tool dist list` names (Go
// 1.26) that can run a provider: every pair but js_wasm and wasip1_wasm,
// which cannot start a plugin process. Packing refuses other names, so a
// typo (linux_x86_64) or a pair no Go toolchain builds never reaches a
// registry, where no client would ever ask for it.
var platforms = []string{
	"aix_ppc64",
	"android_386", "android_amd64", "android_arm", "android_arm64",
	"darwin_amd64", "darwin_arm64",
	"dragonfly_amd64",
	"freebsd_386", "freebsd_amd64", "freebsd_arm", "freebsd_arm64",
	"illumos_amd64",
	"ios_amd64", "ios_arm64",
	"linux_386", "linux_amd64", "linux_arm", "linux_arm64", "linux_loong64",
	"linux_mips", "linux_mips64", "linux_mips64le", "linux_mipsle",
	"linux_ppc64", "linux_ppc64le", "linux_riscv64", "linux_s390x",
	"netbsd_386", "netbsd_amd64", "netbsd_arm", "netbsd_arm64",
	"openbsd_386", "openbsd_amd64", "openbsd_arm", "openbsd_arm64", "openbsd_ppc64", "openbsd_riscv64",
	"plan9_386", "plan9_amd64", "plan9_arm",
	"solaris_amd64",
	"windows_386", "windows_amd64", "windows_arm64",
}

// otherNames are names other tools use for Go's operating systems and
// architectures, for the hint of an unknown platform.
var otherNames = map[string]string{
	"x86_64": "amd64", "x64": "amd64", "x86-64": "amd64",
	"aarch64": "arm64", "armv8": "arm64",
	"i386": "386", "i686": "386", "x86": "386",
	"armv6": "arm", "armv7": "arm", "armhf": "arm", "armv7l": "arm",
	"macos": "darwin", "osx": "darwin", "mac": "darwin",
	"win": "windows", "win32": "windows", "win64": "windows",
}

// CheckPlatform checks that os and arch name a pair Go builds and a
// provider can run on (see `go tool dist list`), and says what the pair is
// called in Go when it is not.
func CheckPlatform(os, arch string) error {
	name := os + "_" + arch
	if slices.Contains(platforms, name) {
		return nil
	}
	switch name {
	case "js_wasm", "wasip1_wasm":
		return registry.Errorf(registry.Invalid, "platform %s cannot run a provider: Terraform and OpenTofu start providers as native plugin processes", name)
	}
	goOS, goArch := strings.ToLower(os), strings.ToLower(arch)
	if n, ok := otherNames[goOS]; ok {
		goOS = n
	}
	if n, ok := otherNames[goArch]; ok {
		goArch = n
	}
	if guess := goOS + "_" + goArch; guess != name && slices.Contains(platforms, guess) {
		return registry.Errorf(registry.Invalid, "unknown platform %s: Go calls it %s (GOOS=%s GOARCH=%s)", name, guess, goOS, goArch)
	}
	var same []string
	for _, p := range platforms {
		if strings.HasPrefix(p, goOS+"_") {
			same = append(same, p)
		}
	}
	if len(same) > 0 {
		return registry.Errorf(registry.Invalid, "unknown platform %s: Go builds %s for %s", name, strings.Join(same, ", "), goOS)
	}
	return registry.Errorf(registry.Invalid, "unknown platform %s: want <os>_<arch> as `go tool dist list` names them (with \"_\" for \"/\"), e.g. linux_amd64, darwin_arm64 or windows_amd64", name)
}

// elfArch is what an ELF header says about a Go architecture.
type elfArch struct {
	machine elf.Machine
	class   elf.Class
	order   elf.Data
}

var elfArches = map[string]elfArch{
	"386":      {elf.EM_386, elf.ELFCLASS32, elf.ELFDATA2LSB},
	"amd64":    {elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"arm":      {elf.EM_ARM, elf.ELFCLASS32, elf.ELFDATA2LSB},
	"arm64":    {elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"loong64":  {elf.EM_LOONGARCH, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"mips":     {elf.EM_MIPS, elf.ELFCLASS32, elf.ELFDATA2MSB},
	"mipsle":   {elf.EM_MIPS, elf.ELFCLASS32, elf.ELFDATA2LSB},
	"mips64":   {elf.EM_MIPS, elf.ELFCLASS64, elf.ELFDATA2MSB},
	"mips64le": {elf.EM_MIPS, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"ppc64":    {elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2MSB},
	"ppc64le":  {elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"riscv64":  {elf.EM_RISCV, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"s390x":    {elf.EM_S390, elf.ELFCLASS64, elf.ELFDATA2MSB},
}

var machoArches = map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}

var peArches = map[string]uint16{
	"386":   pe.IMAGE_FILE_MACHINE_I386,
	"amd64": pe.IMAGE_FILE_MACHINE_AMD64,
	"arm64": pe.IMAGE_FILE_MACHINE_ARM64,
}

var plan9Arches = map[string]uint32{"386": plan9obj.Magic386, "amd64": plan9obj.MagicAMD64, "arm": plan9obj.MagicARM}

// elfOSes are the operating systems whose executables are ELF files.
var elfOSes = []string{"android", "dragonfly", "freebsd", "illumos", "linux", "netbsd", "openbsd", "solaris"}

// CheckExecutable checks that r holds an executable (not an object file,
// library or script) for os and arch, which CheckPlatform accepts, by its
// ELF, Mach-O, PE, Plan 9 or XCOFF header, so that an arm64 build packed
// as amd64 is refused before anyone installs it. The operating system is
// told apart as far as the header says it: FreeBSD, NetBSD and OpenBSD
// executables carry their mark, while Linux, Android, DragonFly and
// illumos/Solaris ones share ELF's generic one, and macOS and iOS ones
// are both Mach-O.
func CheckExecutable(r io.ReaderAt, os, arch string) error {
	want := os + "_" + arch
	rebuild := fmt.Sprintf("build it with GOOS=%s GOARCH=%s go build", os, arch)
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	switch {
	case string(magic[:]) == "\x7fELF":
		f, err := elf.NewFile(r)
		if err != nil {
			return registry.Errorf(registry.Invalid, "is a corrupt ELF file (%v); %s", err, rebuild)
		}
		got := elfArchName(f.FileHeader)
		gotOS := elfOS(f)
		if !slices.Contains(elfOSes, os) {
			return registry.Errorf(registry.Invalid, "is an ELF executable for %s, not a %s one; %s", orUnknown(gotOS, "linux or another ELF system", got), want, rebuild)
		}
		if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
			return registry.Errorf(registry.Invalid, "is an ELF %s, not an executable; pass the file go build wrote", elfTypeName(f.Type))
		}
		if got != arch {
			return registry.Errorf(registry.Invalid, "is an executable for %s, not %s; %s", orUnknown(gotOS, os, got), want, rebuild)
		}
		switch {
		case gotOS != "" && gotOS != os && !(isSolaris(gotOS) && isSolaris(os)):
			return registry.Errorf(registry.Invalid, "is an executable for %s_%s, not %s; %s", gotOS, got, want, rebuild)
		case gotOS == "" && (os == "freebsd" || os == "netbsd" || os == "openbsd"):
			return registry.Errorf(registry.Invalid, "is an executable for linux_%s (or another system without %s's ELF mark), not %s; %s", got, os, want, rebuild)
		}
		return nil

	case isMachOMagic(magic):
		f, err := macho.NewFile(r)
		if err != nil {
			return registry.Errorf(registry.Invalid, "is a corrupt Mach-O file (%v); %s", err, rebuild)
		}
		got := machoArchName(f.Cpu)
		if os != "darwin" && os != "ios" {
			return registry.Errorf(registry.Invalid, "is a macOS executable (darwin_%s), not a %s one; %s", got, want, rebuild)
		}
		if f.Type != macho.TypeExec {
			return registry.Errorf(registry.Invalid, "is a Mach-O %s, not an executable; pass the file go build wrote", f.Type)
		}
		if got != arch {
			return registry.Errorf(registry.Invalid, "is an executable for %s_%s, not %s; %s", os, got, want, rebuild)
		}
		return nil

	case magic == [4]byte{0xca, 0xfe, 0xba, 0xbe}:
		if _, err := macho.NewFatFile(r); err == nil {
			return registry.Errorf(registry.Invalid, "is a universal macOS binary holding several architectures; package one executable per platform (darwin_amd64, darwin_arm64), each built with GOOS=darwin GOARCH=<arch> go build")
		}

	case magic[0] == 'M' && magic[1] == 'Z':
		f, err := pe.NewFile(r)
		if err != nil {
			return registry.Errorf(registry.Invalid, "is a corrupt Windows executable (%v); %s", err, rebuild)
		}
		got := peArchName(f.Machine)
		if os != "windows" {
			return registry.Errorf(registry.Invalid, "is a Windows executable (windows_%s), not a %s one; %s", got, want, rebuild)
		}
		if f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE == 0 || f.Characteristics&pe.IMAGE_FILE_DLL != 0 {
			return registry.Errorf(registry.Invalid, "is a Windows library or object file, not an executable; pass the file go build wrote")
		}
		if got != arch {
			return registry.Errorf(registry.Invalid, "is an executable for windows_%s, not %s; %s", got, want, rebuild)
		}
		return nil

	case binary.BigEndian.Uint16(magic[:2]) == 0x01f7: // XCOFF64, AIX
		if want != "aix_ppc64" {
			return registry.Errorf(registry.Invalid, "is an AIX executable (aix_ppc64), not a %s one; %s", want, rebuild)
		}
		return nil

	case magic[0] == '#' && magic[1] == '!':
		return registry.Errorf(registry.Invalid, "is a script, not a compiled executable; pass the file go build wrote")
	}
	if os == "plan9" {
		if f, err := plan9obj.NewFile(r); err == nil {
			if plan9Arches[arch] != f.Magic {
				return registry.Errorf(registry.Invalid, "is a Plan 9 executable for another architecture than %s; %s", arch, rebuild)
			}
			return nil
		}
	}
	return registry.Errorf(registry.Invalid, "is not an executable (no ELF, Mach-O or PE header); pass the file go build wrote for %s", want)
}

func isSolaris(os string) bool { return os == "solaris" || os == "illumos" }

// orUnknown names a platform for a message: gotOS (or fallback when the
// header names none) and arch (which is "" for one Go does not build).
func orUnknown(gotOS, fallback, arch string) string {
	if gotOS == "" {
		gotOS = fallback
	}
	switch {
	case arch == "":
		return gotOS + " on an architecture Go does not build"
	case strings.Contains(gotOS, " "):
		return gotOS + " on " + arch
	}
	return gotOS + "_" + arch
}

// elfArchName returns the Go architecture of an ELF header, or "".
func elfArchName(h elf.FileHeader) string {
	for name, a := range elfArches {
		if a.machine == h.Machine && a.class == h.Class && a.order == h.Data {
			return name
		}
	}
	return ""
}

// elfOS returns the operating system an ELF file is marked for, or "" for
// the generic mark Linux and others share.
func elfOS(f *elf.File) string {
	switch f.OSABI {
	case elf.ELFOSABI_FREEBSD:
		return "freebsd"
	case elf.ELFOSABI_NETBSD:
		return "netbsd"
	case elf.ELFOSABI_OPENBSD:
		return "openbsd"
	case elf.ELFOSABI_SOLARIS:
		return "solaris"
	}
	// Linkers other than Go's mark NetBSD and OpenBSD executables by a note.
	switch {
	case f.Section(".note.netbsd.ident") != nil:
		return "netbsd"
	case f.Section(".note.openbsd.ident") != nil:
		return "openbsd"
	}
	return ""
}

func elfTypeName(t elf.Type) string {
	switch t {
	case elf.ET_REL:
		return "object file"
	case elf.ET_CORE:
		return "core dump"
	}
	return t.String()
}

func isMachOMagic(m [4]byte) bool {
	le := binary.LittleEndian.Uint32(m[:])
	be := binary.BigEndian.Uint32(m[:])
	return le == macho.Magic32 || le == macho.Magic64 || be == macho.Magic32 || be == macho.Magic64
}

func machoArchName(cpu macho.Cpu) string {
	for name, c := range machoArches {
		if c == cpu {
			return name
		}
	}
	return strings.ToLower(cpu.String())
}

func peArchName(machine uint16) string {
	for name, m := range peArches {
		if m == machine {
			return name
		}
	}
	return fmt.Sprintf("machine 0x%04x", machine)
}
