/** A figure of the overview: a label, a value, and where it leads. */

/** Props: the label, the value, a test id, a tone, a link and a detail. */
export interface TileProps {
  label: string;
  value: string | number;
  id: string;
  tone?: "warn" | "bad";
  /** The page that lists what the figure counts. */
  href?: string;
  /** One short line under the value: which, or when next. */
  detail?: string;
}

/** One tile; with `href`, its label is a link to the list behind it. */
export function Tile(props: TileProps) {
  return (
    <li class="tile" data-testid={`tile-${props.id}`}>
      <span class="tile-label">
        {props.href ? <a href={props.href}>{props.label}</a> : props.label}
      </span>
      <span
        class={props.tone ? `tile-value tone-${props.tone}` : "tile-value"}
        data-testid={`stat-${props.id}`}
      >
        {props.value}
      </span>
      {props.detail && (
        <span class="tile-detail" data-testid={`stat-${props.id}-detail`}>
          {props.detail}
        </span>
      )}
    </li>
  );
}
