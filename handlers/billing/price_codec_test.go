package billing

import (
	"reflect"
	"strings"
	"testing"
)

func TestPriceCodec(t *testing.T) {
	for _, p := range []Price{
		{Model: "seedance", VideoTokens: 2_500_000},
		{Model: "veo-3", Second: 400_000, SecondBands: map[string]Money{"1080p": 600_000, "4k": 1_200_000},
			Audio: 1_500_000, Draft: 500_000, MaxSeconds: 8, Request: 1},
		{Model: "kling", SecondBands: map[string]Money{"480p": 10_000}},
		{Model: "gpt-image-1", Image: 40_000, ImageSizes: []ImagePrice{{Size: "1536x1024", Amount: 60_000},
			{Size: "1024x1024", Quality: "high", Amount: 170_000}}},
		{Model: "gpt-4o-mini", InputTokens: 150_000, OutputTokens: 600_000, MaxOutput: 16384},
	} {
		s := p.Encode()
		got, err := DecodePrice(p.Model, s)
		if err != nil || !reflect.DeepEqual(*got, p) {
			t.Errorf("%+v → %q → %+v, %v", p, s, got, err)
		}
		if strings.ContainsAny(s, "\" \\") {
			t.Errorf("%q has a quote, backslash or space", s)
		}
	}
	if s := (&Price{Model: "m", VideoTokens: 2_500_000}).Encode(); s != "vt=2.5" {
		t.Errorf("a token price is encoded %q, want vt=2.5", s)
	}
	for _, bad := range []string{"", "vt", "vt=x", "vt=1,vt=2", "zz=1", "vt=-1", "vt=1,s=1", "s.8k=1",
		"i.huge=1", "i.1024x1024.ultra=1", "a=1.5", "s=0.4,a=-1", "s=1,ms=-3", "s=1,ms=x", "vt=0.0000001", "s=0"} {
		if p, err := DecodePrice("m", bad); err == nil {
			t.Errorf("DecodePrice(%q) = %+v, want an error", bad, p)
		}
	}
}

// FuzzDecodePrice: any string either fails to decode or decodes to a valid price that encodes
// back to a string decoding to the same price; it never panics.
func FuzzDecodePrice(f *testing.F) {
	for _, s := range []string{"vt=2.5", "s=0.4,s.1080p=0.6,a=1.5,d=0.5,ms=10", "i=0.04,i.1536x1024=0.06,i.1024x1024.high=0.17", "it=0.15,ot=0.6,mo=10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePrice("m", s)
		if err != nil {
			return
		}
		again, err := DecodePrice("m", p.Encode())
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, p, p.Encode(), again, err)
		}
	})
}
