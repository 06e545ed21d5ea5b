/** `GET /ui/incidents` and `GET /ui/incidents/:id`: alerting's incidents with their timelines, read through the store. */
import { Hono } from "hono";
import { describeChannel } from "../../../config/alerts";
import { openStore } from "../../../store";
import type { AppEnv } from "../../types";
import { renderPage } from "../layout";
import { IncidentPage, IncidentsPage } from "../pages/incidents";

/** Open incidents and recent ones shown at most. */
export const INCIDENTS_SHOWN = 50;
const REFRESH_SECONDS = 60;

export const incidentRoutes = new Hono<AppEnv>()
  .get("/incidents", async (c) => {
    const store = openStore(c.env);
    const incidents = await store.alerts.listIncidents(INCIDENTS_SHOWN);
    const messages = await store.alerts.messagesOf(incidents.map((incident) => incident.id));
    const views = incidents.map((incident) => ({ incident, messages: messages.filter((message) => message.incidentId === incident.id) }));
    return renderPage(
      c,
      { title: "Incidents", section: "incidents", signedIn: true, refreshSeconds: REFRESH_SECONDS },
      <IncidentsPage views={views} channels={c.get("config").alerts.channels.map(describeChannel)} nowMs={Date.now()} />,
    );
  })
  .get("/incidents/:id{[0-9]+}", async (c) => {
    const store = openStore(c.env);
    const incident = await store.alerts.incident(Number(c.req.param("id")));
    if (!incident) {
      return renderPage(c, { title: "Not found", section: "incidents", signedIn: true }, <h1>No such incident</h1>, 404);
    }
    const messages = await store.alerts.messagesOf([incident.id]);
    return renderPage(c, { title: `Incident ${incident.id}`, section: "incidents", signedIn: true }, <IncidentPage view={{ incident, messages }} nowMs={Date.now()} />);
  });
