package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"sitepulse/store"
)

func (m *Store) CreateChannel(ctx context.Context, c store.Channel) error {
	if err := c.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[c.UserID]; !ok {
		return store.NotFound("user")
	}
	n := 0
	for _, o := range m.channels {
		if o.UserID == c.UserID {
			n++
		}
	}
	if n >= store.MaxChannelsPerUser {
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

func (m *Store) ChannelsOf(ctx context.Context, userID string) ([]store.Channel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Channel{}
	for _, c := range m.channels {
		if c.UserID == userID {
			out = append(out, cloneChannel(c))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (m *Store) Channel(ctx context.Context, userID, channelID string) (store.Channel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[channelID]
	if !ok || c.UserID != userID {
		return store.Channel{}, store.NotFound("channel")
	}
	return cloneChannel(c), nil
}

func (m *Store) DeleteChannel(ctx context.Context, userID, channelID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[channelID]
	if !ok || c.UserID != userID {
		return store.NotFound("channel")
	}
	delete(m.channels, channelID)
	kept := m.channelDeliveries[:0]
	for _, d := range m.channelDeliveries {
		if d.ChannelID != channelID {
			kept = append(kept, d)
		}
	}
	m.channelDeliveries = kept
	return nil
}

func (m *Store) RecordDelivery(ctx context.Context, userID string, d store.Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[d.ChannelID]
	if !ok || c.UserID != userID {
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

func (m *Store) DeliveriesOf(ctx context.Context, userID, channelID string, limit int) ([]store.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[channelID]
	if !ok || c.UserID != userID {
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

func (m *Store) SwapBudgetState(ctx context.Context, siteID string, broken bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sites[siteID]; !ok {
		return false, store.NotFound("site")
	}
	was := m.budgetsBroken[siteID]
	m.budgetsBroken[siteID] = broken
	return was, nil
}

func (m *Store) SetChannelFailing(ctx context.Context, userID, channelID string, since *time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.channels[channelID]
	if !ok || c.UserID != userID {
		return store.NotFound("channel")
	}
	switch {
	case since == nil:
		c.FailingSince = nil
	case c.FailingSince == nil:
		c.FailingSince = tp(*since)
	}
	m.channels[channelID] = c
	return nil
}
