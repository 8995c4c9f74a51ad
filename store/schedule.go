package store

import "time"

// Schedule is how often a site is scanned besides on publish and on demand. Users write it on
// the site form; Site.Validate checks it (Valid) on every write path.
type Schedule string

// Scan schedules of a site: scanned on publish only, or also every day or week.
const (
	ScheduleOff    Schedule = "off"
	ScheduleDaily  Schedule = "daily"
	ScheduleWeekly Schedule = "weekly"
)

// Schedules lists the schedules a site may have, the default first.
var Schedules = []Schedule{ScheduleOff, ScheduleDaily, ScheduleWeekly}

// Valid reports whether s is one of Schedules.
func (s Schedule) Valid() bool { return s == ScheduleOff || s == ScheduleDaily || s == ScheduleWeekly }

// SchedulePeriod is the time between two scheduled scans; 0 for off or an unknown schedule.
func SchedulePeriod(schedule Schedule) time.Duration {
	switch schedule {
	case ScheduleDaily:
		return 24 * time.Hour
	case ScheduleWeekly:
		return 7 * 24 * time.Hour
	}
	return 0
}

// NextScanAt is when a scheduled scan due at due runs next, seen at now: one period later,
// or, when that has passed too (the service was down for a while), one period after now, so a
// site is never scanned twice to catch up. Nil when the schedule is off.
func NextScanAt(schedule Schedule, due, now time.Time) *time.Time {
	period := SchedulePeriod(schedule)
	if period == 0 {
		return nil
	}
	next := due.Add(period)
	if !next.After(now) {
		next = now.Add(period)
	}
	next = Now(next)
	return &next
}

// ScheduleOrDefault is a site's stored schedule: off when not set.
func ScheduleOrDefault(s Schedule) Schedule {
	if s == "" {
		return ScheduleOff
	}
	return s
}
