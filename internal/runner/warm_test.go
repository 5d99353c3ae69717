package runner

import (
	"fmt"
	"testing"
	"time"
)

// TestForgetOld: a runner remembers at most WarmSets module sets, the ones wanted last,
// and never forgets one in use, however many distinct sets runs import.
func TestForgetOld(t *testing.T) {
	wanted, sizes := map[string]time.Time{}, map[string]int64{}
	start := time.Now()
	for i := range 3 * WarmSets {
		k := fmt.Sprint(i)
		wanted[k], sizes[k] = start.Add(time.Duration(i)*time.Second), 1
		ForgetOld(wanted, sizes, func(k string) bool { return k == "0" })
	}
	if len(wanted) != WarmSets+1 || len(sizes) != WarmSets+1 {
		t.Fatalf("remembers %d sets (%d sizes), want %d and the one in use", len(wanted), len(sizes), WarmSets)
	}
	if _, ok := wanted["0"]; !ok {
		t.Error("the set in use was forgotten")
	}
	if _, ok := wanted[fmt.Sprint(3*WarmSets-1)]; !ok {
		t.Error("the set wanted last was forgotten")
	}
	if _, ok := wanted["1"]; ok {
		t.Error("a set wanted long ago is still remembered")
	}
}

func TestImports(t *testing.T) {
	got := Imports([]byte("import os, pandas as pd\nfrom docx.shared import Pt\n  import json  # x\nimport notamodule\n"))
	if fmt.Sprint(got) != "[docx json pandas]" {
		t.Errorf("Imports = %v", got)
	}
}
