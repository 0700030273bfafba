package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

// wellFormed fails t unless b parses as XML with an <svg> root.
func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, b)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("root element is %q, want svg", root)
	}
}

func TestECDF(t *testing.T) {
	series := []Series{
		{Name: "ours <crash>", Color: Palette[0], Values: []float64{15.1, 15.3, 15.2}},
		{Name: "sample", Color: Palette[1], Values: []float64{22, 31, 18}, Dashed: true},
		{Name: "empty", Color: Palette[2]},
	}
	b := ECDF("Crash failover", "seconds", series, []Ref{{Label: "bound 16.1 s", X: 16.1, Color: "#d62728"}})
	wellFormed(t, b)
	for _, want := range []string{"ours &lt;crash&gt;", "sample", "bound 16.1 s", "Crash failover"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("ECDF output lacks %q", want)
		}
	}
	if n := strings.Count(string(b), "<polyline"); n != 2 {
		t.Errorf("%d polylines, want one per non-empty series (2)", n)
	}
	if !bytes.Equal(b, ECDF("Crash failover", "seconds", series, []Ref{{Label: "bound 16.1 s", X: 16.1, Color: "#d62728"}})) {
		t.Error("ECDF is not deterministic")
	}
}

func TestBars_SkipsNaN(t *testing.T) {
	b := Bars("Ops", "ops per hour", []string{"leader", "follower"}, []Series{
		{Name: "ours", Color: Palette[0], Values: []float64{1800, 3960}},
		{Name: "sample", Color: Palette[1], Values: []float64{360, math.NaN()}},
	})
	wellFormed(t, b)
	if n := strings.Count(string(b), "<rect"); n != 1+3 {
		t.Errorf("%d rects, want the background and three bars (NaN skipped)", n)
	}
	if !strings.Contains(string(b), ">3960<") {
		t.Error("bar values are not labelled")
	}
}

func TestGrid(t *testing.T) {
	xs := []float64{3, 30, 100, 300}
	b := Grid("Scale", "contenders", xs, true, 2, []Panel{
		{Title: "p99", YLabel: "s", Series: []Series{{Name: "p99", Color: Palette[0], Values: []float64{15, 15.2, math.NaN(), 15.9}}}, Refs: []float64{16.2}, RefLabel: "target"},
		{Title: "cpu", YLabel: "%", Series: []Series{{Name: "cpu", Color: Palette[0], Values: []float64{2, 10, 30, 80}}}},
		{Title: "lat", YLabel: "ms", Series: []Series{{Name: "a", Color: Palette[0], Values: []float64{1, 2, 3, 4}}, {Name: "b", Color: Palette[1], Values: []float64{2, 3, 4, 5}}}},
	})
	wellFormed(t, b)
	if !strings.Contains(string(b), "target") || strings.Count(string(b), "<polyline") != 4 {
		t.Errorf("grid lacks its reference label or has the wrong number of lines:\n%s", b)
	}
}

func TestNiceStepAndMax(t *testing.T) {
	tests := []struct {
		span float64
		n    int
		want float64
	}{
		{10, 5, 2}, {100, 8, 20}, {1, 5, 0.2}, {37, 8, 5},
	}
	for _, tt := range tests {
		if got := niceStep(tt.span, tt.n); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("niceStep(%v, %d) = %v, want %v", tt.span, tt.n, got, tt.want)
		}
	}
	if got := niceMax(16.9, 8); got != 20 {
		t.Errorf("niceMax(16.9, 8) = %v, want 20 (step 5)", got)
	}
	if got := niceMax(0, 5); got != 1 {
		t.Errorf("niceMax(0) = %v, want 1", got)
	}
}
