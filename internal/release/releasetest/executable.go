package releasetest

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"testing"
)

// ELFHeader returns the header of an ELF file, as far as debug/elf reads
// it (no program or section headers): enough for release.CheckExecutable.
func ELFHeader(machine elf.Machine, class elf.Class, order elf.Data, osabi elf.OSABI, typ elf.Type) []byte {
	var bo binary.ByteOrder = binary.LittleEndian
	if order == elf.ELFDATA2MSB {
		bo = binary.BigEndian
	}
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(class), byte(order), 1, byte(osabi), 0, 0, 0, 0, 0, 0, 0, 0})
	binary.Write(&b, bo, uint16(typ))
	binary.Write(&b, bo, uint16(machine))
	binary.Write(&b, bo, uint32(1)) // version
	if class == elf.ELFCLASS64 {
		binary.Write(&b, bo, [3]uint64{}) // entry, phoff, shoff
		binary.Write(&b, bo, uint32(0))   // flags
		binary.Write(&b, bo, [6]uint16{64, 56, 0, 64, 0, 0})
	} else {
		binary.Write(&b, bo, [3]uint32{})
		binary.Write(&b, bo, uint32(0))
		binary.Write(&b, bo, [6]uint16{52, 32, 0, 40, 0, 0})
	}
	return b.Bytes()
}

// MachOHeader returns a 64-bit little-endian Mach-O header without load
// commands.
func MachOHeader(cpu macho.Cpu, typ macho.Type) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [8]uint32{macho.Magic64, uint32(cpu), 0, uint32(typ), 0, 0, 0, 0})
	return b.Bytes()
}

// PEHeader returns a DOS stub and a PE file header without sections or
// optional header, padded so that debug/pe reads it.
func PEHeader(machine, characteristics uint16) []byte {
	b := make([]byte, 0x40)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x40)
	b = append(b, "PE\x00\x00"...)
	var fh bytes.Buffer
	binary.Write(&fh, binary.LittleEndian, pe.FileHeader{Machine: machine, Characteristics: characteristics})
	b = append(b, fh.Bytes()...)
	return append(b, make([]byte, 256)...)
}

// Executable returns the header of an executable for platform, one of
// linux, darwin or windows with amd64 or arm64 ("linux_arm64"): a stand-in
// for go build's output that release.CheckExecutable accepts for that
// platform and refuses for any other. It fails the test for another
// platform.
func Executable(t testing.TB, platform string) []byte {
	t.Helper()
	switch platform {
	case "linux_amd64":
		return ELFHeader(elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.ET_EXEC)
	case "linux_arm64":
		return ELFHeader(elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.ET_EXEC)
	case "darwin_amd64":
		return MachOHeader(macho.CpuAmd64, macho.TypeExec)
	case "darwin_arm64":
		return MachOHeader(macho.CpuArm64, macho.TypeExec)
	case "windows_amd64":
		return PEHeader(pe.IMAGE_FILE_MACHINE_AMD64, pe.IMAGE_FILE_EXECUTABLE_IMAGE)
	case "windows_arm64":
		return PEHeader(pe.IMAGE_FILE_MACHINE_ARM64, pe.IMAGE_FILE_EXECUTABLE_IMAGE)
	}
	t.Fatalf("releasetest: no stand-in executable for %s", platform)
	return nil
}
