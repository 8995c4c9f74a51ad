package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"sitepulse/store"
)

func (m *Store) CreateChannel(ctx context.Context, userID string, c store.Channel) error {
	if err := c.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workspaces[c.WorkspaceID]; !ok || !m.canEdit(userID, c.WorkspaceID) {
		return store.NotFound("workspace")
	}
	n := 0
	for _, o := range m.channels {
		if o.WorkspaceID == c.WorkspaceID {
			n++
		}
	}
	if n >= store.MaxChannelsPerWorkspace {
		return fmt.Errorf("%d channels: %w", n, store.ErrLimit)
	}
	if _, ok := m.channels[c.ID]; ok {
		return fmt.Errorf("channel %s: %w", c.ID, store.ErrConflict)
	}
	c.CreatedAt = store.Now(c.CreatedAt)
	m.channels[c.ID] = cloneChannel(c)
	return nil
}

func cloneChannel(c store.Channel) store.Channel {
	c.Events, c.SiteIDs = slices.Clone(c.Events), slices.Clone(c.SiteIDs)
	if c.Events == nil {
		c.Events = []string{}
	}
	if c.SiteIDs == nil {
		c.SiteIDs = []string{}
	}
	return c
}

func (m *Store) ChannelsIn(ctx context.Context, userID, workspaceID string) ([]store.Channel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.canRead(userID, workspaceID) {
		return []store.Channel{}, nil
	}
	return m.channelsOf(workspaceID), nil
}

func (m *Store) WorkspaceChannels(ctx context.Context, workspaceID string) ([]store.Channel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.channelsOf(workspaceID), nil
}

// channelsOf lists a workspace's channels, oldest first; the caller holds m.mu.
func (m *Store) channelsOf(workspaceID string) []store.Channel {
	out := []store.Channel{}
	for _, c := range m.channels {
		if c.WorkspaceID == workspaceID {
			out = append(out, cloneChannel(c))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (m *Store) Channel(ctx context.Context, workspaceID, channelID string) (store.Channel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[channelID]
	if !ok || c.WorkspaceID != workspaceID {
		return store.Channel{}, store.NotFound("channel")
	}
	return cloneChannel(c), nil
}

func (m *Store) DeleteChannel(ctx context.Context, userID, workspaceID, channelID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[channelID]
	if !ok || c.WorkspaceID != workspaceID || !m.canEdit(userID, workspaceID) {
		return store.NotFound("channel")
	}
	m.dropChannel(channelID)
	return nil
}

// dropChannel deletes a channel and its deliveries; the caller holds m.mu.
func (m *Store) dropChannel(channelID string) {
	delete(m.channels, channelID)
	m.channelDeliveries = slices.DeleteFunc(m.channelDeliveries, func(d store.Delivery) bool { return d.ChannelID == channelID })
}

func (m *Store) RecordDelivery(ctx context.Context, workspaceID string, d store.Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[d.ChannelID]
	if !ok || c.WorkspaceID != workspaceID {
		return store.NotFound("channel")
	}
	if d.NextAt != nil {
		d.NextAt = tp(*d.NextAt)
	}
	for i, o := range m.channelDeliveries {
		if o.ChannelID == d.ChannelID && o.EventID == d.EventID {
			o.State, o.Attempts, o.NextAt, o.LastStatus, o.LastError = d.State, d.Attempts, d.NextAt, d.LastStatus, d.LastError
			m.channelDeliveries[i] = o
			return nil
		}
	}
	d.CreatedAt = store.Now(d.CreatedAt)
	m.channelDeliveries = append(m.channelDeliveries, d)
	return nil
}

func (m *Store) DeliveriesOf(ctx context.Context, userID, workspaceID, channelID string, limit int) ([]store.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[channelID]
	if !ok || c.WorkspaceID != workspaceID || !m.canRead(userID, workspaceID) {
		return nil, store.NotFound("channel")
	}
	out := []store.Delivery{}
	for _, d := range m.channelDeliveries {
		if d.ChannelID == channelID {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *Store) SwapBudgetState(ctx context.Context, siteID, scanID string, t store.Triage) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sites[siteID]; !ok {
		return false, store.NotFound("site")
	}
	broken := t.BudgetsBroken
	last := m.budgetsSwap[siteID]
	if last.scanID == scanID {
		return last.was, nil // the same scan again: the first answer
	}
	t.Broken = append([]string{}, t.Broken...)
	m.triage[siteID] = t
	was := m.budgetsBroken[siteID]
	m.budgetsBroken[siteID] = broken
	m.budgetsSwap[siteID] = budgetSwap{scanID: scanID, was: was}
	return was, nil
}

func (m *Store) SetChannelFailing(ctx context.Context, workspaceID, channelID string, since *time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[channelID]
	if !ok || c.WorkspaceID != workspaceID {
		return false, store.NotFound("channel")
	}
	turned := false
	switch {
	case since == nil:
		c.FailingSince = nil
	case c.FailingSince == nil:
		c.FailingSince, turned = tp(*since), true
	}
	m.channels[channelID] = c
	return turned, nil
}

func (m *Store) PlanDeliveries(ctx context.Context, workspaceID string, ds []store.Delivery, jobs []store.JobArgs, now time.Time) (int, error) {
	if len(ds) != len(jobs) {
		return 0, fmt.Errorf("plan deliveries: %d deliveries, %d jobs", len(ds), len(jobs))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	saved := len(m.channelDeliveries)
	nextJob := m.nextJob
	for i, d := range ds {
		c, ok := m.channels[d.ChannelID]
		if !ok || c.WorkspaceID != workspaceID || slices.ContainsFunc(m.channelDeliveries, func(o store.Delivery) bool {
			return o.ChannelID == d.ChannelID && o.EventID == d.EventID
		}) {
			continue
		}
		d.State, d.Attempts, d.NextAt, d.LastStatus, d.LastError = store.DeliveryPending, 0, nil, 0, ""
		d.CreatedAt = store.Now(d.CreatedAt)
		m.channelDeliveries = append(m.channelDeliveries, d)
		if _, err := m.insertJob(jobs[i].Kind(), jobs[i], "", now, now); err != nil {
			// all or nothing, as the Postgres transaction
			m.channelDeliveries = m.channelDeliveries[:saved]
			for id := nextJob + 1; id <= m.nextJob; id++ {
				delete(m.jobs, id)
			}
			m.nextJob = nextJob
			return 0, err
		}
		n++
	}
	return n, nil
}

// budgetSwap is the scan that last swapped a site's budget state and the state it found.
type budgetSwap struct {
	scanID string
	was    bool
}
