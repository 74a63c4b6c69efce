package main

import (
	"testing"

	"github.com/gojev/gojev/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
