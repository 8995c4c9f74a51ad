package store

import (
	"errors"
	"testing"
	"time"
)

func TestNextScanAt(t *testing.T) {
	due := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	day, week := 24*time.Hour, 7*24*time.Hour
	tests := []struct {
		name     string
		schedule Schedule
		now      time.Time
		want     time.Duration // after due; -1 for none
	}{
		{"off has no next scan", ScheduleOff, due, -1},
		{"an unknown schedule has none", "hourly", due, -1},
		{"daily runs a day after it was due", ScheduleDaily, due.Add(time.Minute), day},
		{"weekly runs a week after it was due", ScheduleWeekly, due.Add(time.Minute), week},
		{"a daily scan two days late runs a day after now, not twice to catch up", ScheduleDaily, due.Add(2*day + time.Hour), 3*day + time.Hour},
		{"a scan exactly a period late runs a period after now", ScheduleDaily, due.Add(day), 2 * day},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NextScanAt(tt.schedule, due, tt.now)
			if tt.want < 0 {
				if got != nil {
					t.Errorf("next = %v, want none", got)
				}
				return
			}
			if got == nil || !got.Equal(due.Add(tt.want)) {
				t.Errorf("next = %v, want %v", got, due.Add(tt.want))
			}
		})
	}
}

func TestEnumsValid(t *testing.T) {
	for _, tt := range []struct {
		in   Schedule
		want bool
	}{{"off", true}, {"daily", true}, {"weekly", true}, {"", false}, {"hourly", false}, {"Daily", false}} {
		if got := tt.in.Valid(); got != tt.want {
			t.Errorf("Schedule(%q).Valid() = %v, want %v", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct {
		in   Strategy
		want bool
	}{{"mobile", true}, {"desktop", true}, {"both", true}, {"", false}, {"tablet", false}, {"MOBILE", false}} {
		if got := tt.in.Valid(); got != tt.want {
			t.Errorf("Strategy(%q).Valid() = %v, want %v", tt.in, got, tt.want)
		}
	}
	for _, s := range []ScanStatus{StatusQueued, StatusRunning, StatusComplete, StatusFailed} {
		if got, want := s.Terminal(), s == StatusComplete || s == StatusFailed; got != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, got, want)
		}
	}
	if err := (Budget{Threshold: 1, Strategy: "tablet"}).Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("a budget for strategy tablet: %v, want ErrInvalid", err)
	}
}
