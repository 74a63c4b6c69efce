package systemone_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/systemone"
)

// TestOfficialSDK points TypeSafe's official client (typesafe-sdk, pinned, unmodified, in the
// venv scripts/sdk-venv.sh makes) at a server on the small model and runs
// testdata/sdk_check.py: every question type and several in one request, the models list,
// concurrent requests, zstd bodies, and the error cases (box, a state longer than n_ctx, a body
// over the limit, an unknown model, a wrong key, a missing field). The client parses every
// answer strictly, so the test fails if one does not fit the API.
func TestOfficialSDK(t *testing.T) {
	python := testenv.SDKPython(t)
	const nCtx = 512
	d, err := gojev.Open(context.Background(), testenv.SmallModel(t), gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2, NCtx: nCtx}})
	require.NoError(t, err)
	defer d.Close()
	h := systemone.NewHandler(systemone.Config{Decider: d, APIKeys: []string{"test-key"},
		Model:  systemone.Model{Name: filepath.Base(testenv.SmallModel(t)), Description: "the small test model", ReleaseDate: "2026-12-06"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(h)
	defer srv.Close()

	cmd := exec.Command(python, filepath.Join("testdata", "sdk_check.py"))
	cmd.Env = append(os.Environ(), "TYPESAFE_BASE_URL="+srv.URL, "TYPESAFE_API_KEY=test-key", "JEV_N_CTX="+strconv.Itoa(nCtx))
	out, err := cmd.CombinedOutput()
	t.Logf("sdk_check.py:\n%s", out)
	require.NoError(t, err)
	assert.Contains(t, string(out), "all checks passed")
	assert.GreaterOrEqual(t, strings.Count(string(out), "\nok "), 20)
	assert.Zero(t, h.InFlight(), "every question's slot given back")
}
