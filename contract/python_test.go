package contract_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/testenv"
)

// The payload the seed's reference (Python's json.dumps) builds for each row, compared byte
// for byte with DirectMessages on the real Banking77 rows and on rows with unicode, nesting
// and edge-case numbers.
const pythonPayload = `
import json, sys
L = "ABCDEFGHIJKLMNOP"
for line in sys.stdin:
    row = json.loads(line)
    payload = {"evidence": row["state"], "criterion": row["question"],
               "options": [{"letter": L[i], "description": o["description"]} for i, o in enumerate(row["options"])]}
    print(json.dumps(payload))
`

func TestPayloadEqualsPythonOnRealRows(t *testing.T) {
	python := testenv.Python3(t)
	data, err := os.ReadFile(testenv.SharedData(t, "banking77/sample-200-8opt.jsonl"))
	require.NoError(t, err)
	extra := []string{
		`{"id": "u", "state": {"message": "Déjà vu 😀 — \"quoted\" \\ \u0007", "amount": 1e16, "ratio": 1e-05, "n": 12345678901234567890123, "z": -0.0, "one": 1.0, "nested": {"b": [true, false, null], "a": {}}}, "question": "Which queue? 哪一个", "options": [{"id": "x", "description": "tab\there"}, {"id": "y", "description": ""}]}`,
	}
	input := append(bytes.TrimSpace(data), []byte("\n"+strings.Join(extra, "\n")+"\n")...)
	cmd := exec.Command(python, "-c", pythonPayload)
	cmd.Stdin = bytes.NewReader(input)
	out, err := cmd.Output()
	require.NoError(t, err)

	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	sc := bufio.NewScanner(bytes.NewReader(input))
	sc.Buffer(nil, 1<<20)
	i := 0
	for sc.Scan() {
		row, err := contract.ParseRow(sc.Bytes())
		require.NoError(t, err)
		msgs, err := contract.DirectMessages(row.State, row.Question, row.Options)
		require.NoError(t, err)
		require.Equal(t, want[i], msgs[1].Content, "row %d", i)
		i++
	}
	require.Len(t, want, i)
	t.Logf("%d payloads byte-identical to Python's json.dumps", i)
}
