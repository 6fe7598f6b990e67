// pulumi-reader: reads stack files with the Pulumi CLI's own code (sdk v3.274.0, workspace.LoadProjectStack, the
// version the e2e suite builds the CLI at) and prints, per file, one JSON line: the config values as the engine hands
// them to the program (config.Map.Decrypt; secrets blinded as `pulumi config --json` shows them), or the error.
// The fuzzer compares aiperf-kueue's loader with it: python -m tests.fuzz --oracle PATH (see docs/yaml.md).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

type entry struct {
	Value  string `json:"value"`
	Secret bool   `json:"secret"`
	Object bool   `json:"object"`
}

type result struct {
	Path   string           `json:"path"`
	OK     bool             `json:"ok"`
	Error  string           `json:"error,omitempty"`
	Config map[string]entry `json:"config,omitempty"`
}

func load(path string) (res result) {
	res.Path = path
	defer func() {
		if r := recover(); r != nil {
			res.OK = false
			res.Error = fmt.Sprintf("panic: %v", r)
			res.Config = nil
		}
	}()
	project := &workspace.Project{Name: tokens.PackageName("aiperf-kueue")}
	ps, err := workspace.LoadProjectStack(nil, project, path)
	if err != nil {
		res.Error = err.Error()
		return
	}
	decrypted, err := ps.Config.Decrypt(config.NewBlindingDecrypter())
	if err != nil {
		res.Error = "decrypt: " + err.Error()
		return
	}
	res.Config = map[string]entry{}
	for k, v := range ps.Config {
		res.Config[k.String()] = entry{Value: decrypted[k], Secret: v.Secure(), Object: v.Object()}
	}
	res.OK = true
	return
}

func main() {
	out := json.NewEncoder(os.Stdout)
	if len(os.Args) > 1 {
		for _, p := range os.Args[1:] {
			_ = out.Encode(load(p))
		}
		return
	}
	// One path per stdin line: a long-running oracle for the fuzzer.
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		_ = out.Encode(load(scanner.Text()))
	}
}
