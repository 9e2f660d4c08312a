package config

import (
	"bufio"
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"strings"

	"trove.dev/trove/internal/registry"
)

// FlagConfig is the flag naming the settings file (TROVE_CONFIG).
const FlagConfig = "config"

// ReadSettings reads the settings file at path (see ParseSettings).
func ReadSettings(path string, getenv func(string) string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "cannot read the settings file: %s", err)
	}
	defer f.Close()
	return ParseSettings(f, path, getenv)
}

// ParseSettings parses a settings file, name being its name in errors:
// lines of KEY=VALUE (optionally "export KEY=VALUE", VALUE optionally in
// single or double quotes), blank lines and # comments, as a shell's
// environment file. Every KEY must be the environment variable of a flag
// of `trove serve` (EnvVar), except TROVE_CONFIG: a file names no other.
// ${NAME} and $NAME in a value are replaced by getenv(NAME), except in
// single quotes, so that secrets can stay in the environment.
func ParseSettings(r io.Reader, name string, getenv func(string) string) (map[string]string, error) {
	known := knownSettings()
	settings := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case !ok:
			return nil, registry.Errorf(registry.Invalid, "%s:%d: want KEY=VALUE, got %q", name, n, line)
		case key == EnvVar(FlagConfig):
			return nil, registry.Errorf(registry.Invalid, "%s:%d: %s cannot be set in a settings file: one file holds all the settings", name, n, key)
		case known[key] == "":
			return nil, registry.Errorf(registry.Invalid, "%s:%d: unknown setting %q: use the TROVE_* variables of `trove serve` (see trove serve --help)", name, n, key)
		}
		quote := byte(0)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			quote, value = value[0], value[1:len(value)-1]
		}
		if quote != '\'' { // single quotes keep $ literally, as in a shell
			value = os.Expand(value, getenv)
		}
		settings[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, registry.Errorf(registry.Invalid, "reading %s: %s", name, err)
	}
	return settings, nil
}

// knownSettings maps the environment variable of every flag of `trove
// serve` to the flag's name.
func knownSettings() map[string]string {
	var c Config
	known := map[string]string{}
	c.FlagSet("serve").VisitAll(func(f *flag.Flag) { known[EnvVar(f.Name)] = f.Name })
	return known
}

// setFromSettings sets the flag of every setting of the file name, in a
// fixed order, so that the environment and flags applied afterwards
// override them. Empty values count as unset, as in the environment.
func setFromSettings(fs *flag.FlagSet, settings map[string]string, name string) error {
	known := knownSettings()
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		v := settings[k]
		if v == "" {
			continue
		}
		if err := fs.Set(known[k], v); err != nil {
			errs = append(errs, registry.Errorf(registry.Invalid, "%s: invalid %s=%q: %s", name, k, v, err))
		}
	}
	return errors.Join(errs...)
}

// LoadFile loads the configuration of `trove serve` from the settings
// file at path alone: TROVE_* variables of the environment are ignored
// (two files loaded side by side, as by `trove store copy`, must not
// share them), while ${NAME} in values and the variables Trove reads
// besides its own (HOME, AWS_*) still come from getenv. Errors name the
// file.
func LoadFile(path string, getenv func(string) string) (Config, error) {
	settings, err := ReadSettings(path, getenv)
	if err != nil {
		return Config{}, err
	}
	c, err := load(nil, func(name string) string {
		if strings.HasPrefix(name, EnvPrefix) {
			return ""
		}
		return getenv(name)
	}, path, settings, nil)
	if err != nil && !strings.HasPrefix(err.Error(), path+":") { // errors of a setting name the file already
		return Config{}, registry.Errorf(registry.KindOf(err), "%s: %s", path, strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return c, err
}
