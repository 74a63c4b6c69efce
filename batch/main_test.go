package batch_test

import (
	"testing"

	"github.com/gojev/gojev/internal/testenv"
)

func TestMain(m *testing.M) {
	modelFile = testenv.ExampleModel()
	testenv.Main(m)
}
