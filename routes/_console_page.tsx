/**
 * The frame of every console page: the shell with the console's header bar,
 * the side bar of pages, a heading.
 */
import type { ComponentChildren } from "preact";
import { Layout } from "../components/layout.tsx";
import {
  ConsoleBar,
  type ConsolePageKey,
  ConsoleSideNav,
} from "./_console_nav.tsx";
import { Island } from "../islands/_registry.ts";
import type { AlertBoard } from "../services/console/alert_episodes.ts";

/** Who is looking: the signed-in operator of `routes/console/_guard.ts`. */
export interface Operator {
  name: string;
  sandboxId: string;
  csrfToken: string;
  /**
   * The sandbox's alerts and dead letters when the page was rendered, for
   * the banner and the side bar's count.
   */
  board?: AlertBoard;
}

/** Props: the page's title and key, the operator, and the content. */
export interface ConsolePageProps {
  title: string;
  current: ConsolePageKey;
  operator: Operator;
  /** One line under the heading: what this page answers. */
  lead?: ComponentChildren;
  /** What the header's search box holds. */
  query?: string;
  children: ComponentChildren;
}

/**
 * A console page: the header bar with the operator, the side bar of pages,
 * the alerts banner (live), heading, lead, content.
 */
export function ConsolePage(props: ConsolePageProps) {
  const { operator } = props;
  return (
    <Layout
      title={`${props.title} · Console`}
      csrfToken={operator.csrfToken}
      footer={
        <>
          {" "}Every page here has a JSON twin:{" "}
          <a href="/api/docs">the API reference</a>.
        </>
      }
      tools={
        <ConsoleBar
          name={operator.name}
          csrfToken={operator.csrfToken}
          query={props.query}
        />
      }
    >
      <div class="console-frame">
        <ConsoleSideNav
          current={props.current}
          deadLetters={operator.board?.deadLetters}
        />
        <div class="console" data-testid={`console-${props.current}`}>
          <Island
            name="alert_banner"
            props={{
              initial: operator.board ?? { alerts: [], deadLetters: 0 },
            }}
          />
          <header class="console-head">
            <h1>{props.title}</h1>
            {props.lead && <p class="console-lead">{props.lead}</p>}
          </header>
          {props.children}
        </div>
      </div>
    </Layout>
  );
}
